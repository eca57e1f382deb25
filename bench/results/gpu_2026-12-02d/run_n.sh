#!/usr/bin/env bash
# Run N (2026-12-03, fifth session; runs M and M1 folded into one call when
# machines were scarce): the GPU suite with only the last piece recording,
# the capture and stages benchmarks, the soak, then compute-sanitizer
# racecheck over the binaries run L did not reach, in the time left.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
START=$(date +%s)
( OUT=/tmp/suite_res timeout 150 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
grep -h "piece [0-9]\|binding_probe" /tmp/suite_res/example_piecewise_block.log 2>/dev/null | cut -c1-300 > $OUT/piecewise_example_pieces.txt
echo "suite took $(( $(date +%s) - START )) s" >> $OUT/suite.log
T1=$(date +%s)
{
echo "=== 256 8192"; timeout 90 $G/bench/capture_bench 256 8192
echo "=== --kernels 1000 256"; timeout 60 $G/bench/capture_bench --kernels 1000 256
echo "=== stages_micro 64"; timeout 40 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 1"; timeout 40 $G/bench/stages_micro 1 2>&1 | grep -v " info encore "
} > $OUT/bench.log 2>&1
echo "benches took $(( $(date +%s) - T1 )) s" >> $OUT/bench.log
{ echo "=== soak"; timeout 70 carry/soak_unstripped | cut -c1-300; echo "soak rc=$?"; } > $OUT/soak.log 2>&1
T2=$(date +%s)
LEFT=$(( 540 - (T2 - START) ))
( OUT=/tmp/rc timeout $LEFT bash $G/tools/gpu_suite.sh run --racecheck --timeout 150 --filter '^(checks|decode|device_loop|fallback|host_flag|piecewise_block|quickstart|tensor_parallel|serving|philox_test|read_scalar_test|region_checksums_gpu_test|replay_path_gpu_test|serving_gpu_test|shims_in_method_gpu_test|stages_gpu_test|verify_gpu_test)$' ) > $OUT/racecheck.log 2>&1
LEFT2=$(( 545 - ($(date +%s) - START) ))
[ $LEFT2 -gt 20 ] && ( OUT=/tmp/rc/fm timeout $LEFT2 bash $G/tools/gpu_suite.sh run --racecheck --timeout $LEFT2 --filter '^fault_matrix_gpu_test$' ) >> $OUT/racecheck.log 2>&1
for f in /tmp/rc/*.log /tmp/rc/fm/*.log; do n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"; done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T2 )) s of $LEFT" >> $OUT/racecheck.log
echo done
