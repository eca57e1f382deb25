#!/usr/bin/env bash
# Run W (2026-12-03, eighth session): the GPU suite; stages_micro with every
# output carved from one allocation and the floor also on encore's own
# buffer and on a late cudaMalloc, three rounds at K=64 and K=1;
# checksum_micro (the passes' bandwidth against a D2D copy); capture_bench
# 256 MiB twice and 8 GiB once (the probe's phases, verify_every=10).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
START=$(date +%s)
( OUT=/tmp/suite_res timeout 150 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
echo "suite took $(( $(date +%s) - START )) s" >> $OUT/suite.log
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
T2=$(date +%s)
{
echo "=== checksum_micro 256 8192"; timeout 90 $G/bench/checksum_micro 256 8192
echo "=== capture_bench 256 (1)"; timeout 60 $G/bench/capture_bench 256
echo "=== capture_bench 8192"; timeout 90 $G/bench/capture_bench 8192
echo "=== capture_bench 256 (2)"; timeout 60 $G/bench/capture_bench 256
} 2>&1 | grep -v " info encore " > $OUT/bench.log
echo "benches took $(( $(date +%s) - T2 )) s" >> $OUT/bench.log
echo done
