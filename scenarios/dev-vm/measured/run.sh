#!/bin/bash
# Runs each job with /proc/interrupts, /proc/stat and /sys/block/vda/stat snapshots around it.
set -e
cd "${OUTDIR:-docs/research/virtio-measure}"
mkdir -p docs/research/fio-scratch
if [ ! -f docs/research/fio-scratch/testfile ]; then
  fio --name=layout --filename=docs/research/fio-scratch/testfile --size=1G --rw=write --bs=1M --direct=1 --output=docs/research/virtio-measure/layout.txt
fi
for name in "$@"; do
  sync; sleep 2
  cat /proc/interrupts > $name.irq0; cat /proc/stat > $name.stat0; cat /sys/block/vda/stat > $name.blk0; date +%s.%N > $name.t0
  fio --output-format=json --output=$name.json $name.fio
  date +%s.%N > $name.t1; cat /proc/interrupts > $name.irq1; cat /proc/stat > $name.stat1; cat /sys/block/vda/stat > $name.blk1
  echo "done $name"
done
