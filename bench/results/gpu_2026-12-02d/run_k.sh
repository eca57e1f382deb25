#!/usr/bin/env bash
# Run K (2026-12-02, fourth session): the GPU suite after the probe's
# static-buffer check and the batched verdict reads; capture_bench before
# (carry/capture_bench_before, the third session's last code) and after,
# taking turns; stages_micro after.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
T0=$(date +%s)
( OUT=/tmp/suite_res timeout 200 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
grep -h -A12 "piece\|binding" /tmp/suite_res/example_piecewise_block.log 2>/dev/null | tail -40 > $OUT/piecewise_example_tail.txt
echo "suite took $(( $(date +%s) - T0 )) s" >> $OUT/suite.log
{
for round in 1 2; do
  echo "=== round $round: before 256 8192"; timeout 120 carry/capture_bench_before 256 8192
  echo "=== round $round: after 256 8192"; timeout 120 $G/bench/capture_bench 256 8192
done
echo "=== before --kernels 1000 256"; timeout 90 carry/capture_bench_before --kernels 1000 256
echo "=== after --kernels 1000 256"; timeout 90 $G/bench/capture_bench --kernels 1000 256
echo "=== stages_micro 64 before"; timeout 60 carry/stages_micro_before 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 64 after"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
} > $OUT/bench.log 2>&1
echo "all took $(( $(date +%s) - T0 )) s" >> $OUT/bench.log
echo done
