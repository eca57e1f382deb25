#!/usr/bin/env bash
# Run AA (2026-12-03, eighth session): the GPU suite with the direct form's
# whole-executable rewrite (cudaGraphExecUpdate from its graph, node by node
# only where CUDA refuses); binding_micro (bare whole update, encore direct
# over 96 address sets for 64 executables) and capture_bench 256 MiB with
# the library before (carry/*_before, 526856d's library) and after, taking
# turns; stages_micro 64 with the exec-level rewrite followed by an upload.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
START=$(date +%s)
( OUT=/tmp/suite_res timeout 150 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
echo "suite took $(( $(date +%s) - START )) s" >> $OUT/suite.log
T1=$(date +%s)
{
for k in 128 1; do
  echo "=== binding_micro $k before"; timeout 90 carry/binding_micro_before $k
  echo "=== binding_micro $k after"; timeout 90 $G/bench/binding_micro $k
done
for round in 1 2; do
  echo "=== round $round: capture_bench 256 before"; timeout 60 carry/capture_bench_before 256
  echo "=== round $round: capture_bench 256 after"; timeout 60 $G/bench/capture_bench 256
done
echo "=== capture_bench --kernels 1000 256 before"; timeout 60 carry/capture_bench_before --kernels 1000 256
echo "=== capture_bench --kernels 1000 256 after"; timeout 60 $G/bench/capture_bench --kernels 1000 256
} 2>&1 | grep -v " info encore " > $OUT/bench.log
echo "benches took $(( $(date +%s) - T1 )) s" >> $OUT/bench.log
timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore " > $OUT/stages_micro.log
rm -f $OUT/*.json
echo done
