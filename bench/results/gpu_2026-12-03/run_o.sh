#!/usr/bin/env bash
# Run O (2026-12-03, sixth session): the GPU suite with the probe's upload,
# capture_bench before and after the upload taking turns, stages_micro's
# record-node variants (cudaEventRecordExternal), and compute-sanitizer
# racecheck over the five binaries no earlier run finished under it, five at
# once (each its own process and context).
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
for round in 1 2 3; do
  echo "=== round $round: before (be928a5) 256"; timeout 40 carry/capture_bench_before 256
  echo "=== round $round: after (upload) 256"; timeout 40 $G/bench/capture_bench 256
done
echo "=== after (upload) 8192"; timeout 60 $G/bench/capture_bench 8192
echo "=== before (be928a5) 8192"; timeout 60 carry/capture_bench_before 8192
echo "=== after (upload) --kernels 1000 256"; timeout 60 $G/bench/capture_bench --kernels 1000 256
echo "=== stages_micro 64"; timeout 40 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 1"; timeout 40 $G/bench/stages_micro 1 2>&1 | grep -v " info encore "
} > $OUT/bench.log 2>&1
echo "benches took $(( $(date +%s) - T1 )) s" >> $OUT/bench.log
T2=$(date +%s)
LEFT=$(( 560 - (T2 - START) ))
for b in graph_arena_gpu_test fault_matrix_gpu_test device_loop quickstart serving; do
  ( OUT=/tmp/rc/$b timeout $LEFT bash $G/tools/gpu_suite.sh run --racecheck --timeout $(( LEFT - 15 )) --filter "^$b\$" ) > /tmp/rc_$b.log 2>&1 &
done
wait
cat /tmp/rc_*.log > $OUT/racecheck.log
for f in /tmp/rc/*/*.log; do n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"; done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T2 )) s of $LEFT" >> $OUT/racecheck.log
echo done
