#!/bin/sh
# Wall-clock speed of the simulator on the lent 16-core machine (docs/model.md, "Speed"):
# the 5-drive C3 rig for 200 ms of simulated time and C1 at 8 disks x 6 jobs for 20 ms,
# on 1, 2, 5 and 8 threads, each run three times (the median goes into the table), and
# a check that every thread count printed the same report. Uses target/tools/irqlab
# (`make device-tools`), else target/release/irqlab. Writes OUT/speed.tsv and the reports.
set -eu
out=${1:-${OUT:?give OUT as an argument or in the environment}}
root=$(cd "$(dirname "$0")/.." && pwd)
irqlab=${IRQLAB:-$root/target/tools/irqlab}
[ -x "$irqlab" ] || irqlab=$root/target/release/irqlab
mkdir -p "$out"
printf 'case\tdelivery\tthreads\trep\twall_s\n' > "$out/speed.tsv"
run() { # case delivery threads job platform disks jobs runtime
  # The scenario's job with its runtime set to the case's (--max-runtime only caps).
  sed "s/^runtime=.*/runtime=$8/" "$root/$4" > "$out/$1.fio"
  for rep in 1 2 3; do
    s=$(date +%s.%N)
    "$irqlab" run "$out/$1.fio" --platform "$root/$5" --delivery "$2" --disks "$6" \
      --jobs-per-disk "$7" --threads "$3" > "$out/$1-$2-$3.txt"
    e=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$rep" "$(awk "BEGIN{print $e - $s}")" >> "$out/speed.tsv"
  done
}
for t in 1 2 5 8; do
  for d in remapped posted polled; do
    run c3-5drives "$d" "$t" scenarios/c3/randread-io_uring-512.fio platforms/optane-gen2.toml 5 1 200ms
  done
  for d in remapped posted; do
    run c1-8x6 "$d" "$t" scenarios/c1/randread-libaio.fio platforms/spr-gen5.toml 8 6 20ms
  done
done
for f in "$out"/*-1.txt; do
  for t in 2 5 8; do cmp -s "$f" "${f%-1.txt}-$t.txt" || echo "DIFFERS: ${f%-1.txt}-$t.txt" >> "$out/speed.tsv"; done
done
nproc >> "$out/speed.tsv"; grep -m1 'model name' /proc/cpuinfo >> "$out/speed.tsv"
