#!/bin/sh
# Captures this machine into OUT: `irqlab capture` (topology, devices, vectors, the fio
# battery with /proc/interrupts around each run), `irqlab hostbench` (bench.json in the
# capture), their text, and lscpu. Runs where there is no network: it uses
# target/tools/irqlab and target/tools/fio when there (`make device-tools` builds them,
# both static), else irqlab from target/release or PATH and fio from PATH; with no fio
# at all it records the machine without runs.
#
#   scripts/device-capture.sh [OUT]        OUT defaults to $OUT
#   QUICK=1 scripts/device-capture.sh      3 s runs on a 256 MiB file instead of 10 s on 1 GiB
#   TARGET=/dev/nvme1n1 scripts/device-capture.sh   an unused disk, read only
#
# The runs read a file laid out in the current directory, removed afterwards.
set -eu
out=${1:-${OUT:?give OUT as an argument or in the environment}}
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools

irqlab=${IRQLAB:-}
for c in "$tools/irqlab" "$root/target/release/irqlab"; do
  [ -n "$irqlab" ] || { [ -x "$c" ] && irqlab=$c; }
done
[ -n "$irqlab" ] || irqlab=$(command -v irqlab) || { echo "device-capture: no irqlab binary; run make device-tools" >&2; exit 1; }

fio_arg=""
if [ -n "${FIO:-}" ]; then fio_arg="--fio $FIO"
elif [ -x "$tools/fio" ]; then fio_arg="--fio $tools/fio"
elif command -v fio >/dev/null 2>&1; then fio_arg=""
else fio_arg="--no-fio"; echo "device-capture: no fio here: the machine only, no runs" >&2
fi

mkdir -p "$out"
{
  echo "irqlab: $irqlab ($("$irqlab" --version))"
  echo "fio: ${fio_arg:-fio on PATH}"
  uname -a
  echo "nproc: $(nproc)"
  echo "cwd: $(pwd) ($(df -h . | tail -n 1))"
} > "$out/env.txt"
LC_ALL=C lscpu > "$out/lscpu.txt" 2>&1 || true
lsblk -o NAME,SIZE,TYPE,MOUNTPOINT,MODEL > "$out/lsblk.txt" 2>&1 || true

# The capture, then the benchmark into the same directory: a failure of one still leaves
# the other, and the exit status says whether both worked.
status=0
# shellcheck disable=SC2086 # fio_arg is one option and its value, or nothing
"$irqlab" capture --out "$out/capture" $fio_arg ${QUICK:+--quick} ${TARGET:+--target "$TARGET"} || status=$?
"$irqlab" hostbench --out "$out/capture" > "$out/hostbench.txt" || status=$?
cat "$out/hostbench.txt"
if [ -f "$out/capture/manifest.json" ]; then
  "$irqlab" capture --show "$out/capture" > "$out/capture-show.txt" || status=$?
  cat "$out/capture-show.txt"
fi
exit "$status"
