#!/usr/bin/env bash
# Run U (2026-12-03, seventh session): stages_micro with the completion
# marks issue 23 asks to compare (record nodes, a host cudaEventRecord, a
# counter kernel, a driver memory-op node; the record node and the counter
# added after the capture as encore adds its record node), two rounds at
# K=64 and K=1.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
for round in 1 2; do
  for k in 64 1; do
    echo "=== round $round: stages_micro $k"
    timeout 60 $G/bench/stages_micro $k 2>&1 | grep -v " info encore "
    cp $OUT/stages_micro.json $OUT/stages_micro_r${round}_k$k.json 2>/dev/null
  done
done > $OUT/stages_micro.log 2>&1
rm -f $OUT/stages_micro.json
echo done
