#!/usr/bin/env bash
# Run M (2026-12-03, fifth session): the GPU suite with only the last piece
# recording; compute-sanitizer racecheck over the two
# binaries run L leaves out (fault_matrix_gpu_test, the serving example at
# its shortest trace), the capture and stages benchmarks at the last code,
# and the soak.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
T0=$(date +%s)
( OUT=/tmp/suite_res timeout 150 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
grep -h "piece [0-9]\|binding_probe" /tmp/suite_res/example_piecewise_block.log 2>/dev/null | cut -c1-300 > $OUT/piecewise_example_pieces.txt
echo "suite took $(( $(date +%s) - T0 )) s" >> $OUT/suite.log
T0=$(date +%s)
( OUT=/tmp/rc2 timeout 270 bash $G/tools/gpu_suite.sh run --racecheck --timeout 250 --filter '^(fault_matrix_gpu_test|serving)$' ) > $OUT/racecheck.log 2>&1
for f in /tmp/rc2/*.log; do n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"; done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T0 )) s" >> $OUT/racecheck.log
T1=$(date +%s)
{
echo "=== 256 8192"; timeout 90 $G/bench/capture_bench 256 8192
echo "=== --kernels 1000 256"; timeout 60 $G/bench/capture_bench --kernels 1000 256
echo "=== stages_micro 64"; timeout 40 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 1"; timeout 40 $G/bench/stages_micro 1 2>&1 | grep -v " info encore "
} > $OUT/bench.log 2>&1
echo "benches took $(( $(date +%s) - T1 )) s" >> $OUT/bench.log
{ echo "=== soak"; timeout 70 carry/soak_unstripped | cut -c1-300; echo "soak rc=$?"; } > $OUT/soak.log 2>&1
echo done
