#!/usr/bin/env bash
# Run X (2026-12-03, eighth session): stages_micro with every variant on one
# output buffer (the floor also on the next 4 KiB and on a late cudaMalloc)
# and the targets also over pairs from the same repeat, three rounds at K=64
# and K=1.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
T1=$(date +%s)
for round in 1 2 3; do
  for k in 64 1; do
    echo "=== round $round: stages_micro $k"
    timeout 60 $G/bench/stages_micro $k 2>&1 | grep -v " info encore "
    cp $OUT/stages_micro.json $OUT/stages_micro_r${round}_k$k.json 2>/dev/null
  done
done > $OUT/stages_micro.log 2>&1
rm -f $OUT/stages_micro.json
echo "stages_micro took $(( $(date +%s) - T1 )) s" >> $OUT/stages_micro.log
echo done
