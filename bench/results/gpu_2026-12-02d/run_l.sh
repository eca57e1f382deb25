#!/usr/bin/env bash
# Run L (2026-12-02, fourth session): the GPU suite after the probe keeps a
# piece's unnamed outputs' data; then compute-sanitizer racecheck over every
# test and example but fault_matrix_gpu_test and the serving example (run N).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
T0=$(date +%s)
( OUT=/tmp/suite_res timeout 150 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
grep -h "piece [0-9]\|binding_probe" /tmp/suite_res/example_piecewise_block.log 2>/dev/null | cut -c1-300 > $OUT/piecewise_example_pieces.txt
echo "suite took $(( $(date +%s) - T0 )) s" >> $OUT/suite.log
T1=$(date +%s)
( OUT=/tmp/rc timeout 420 bash $G/tools/gpu_suite.sh run --racecheck --timeout 150 --filter '^(checks|decode|device_loop|fallback|host_flag|piecewise_block|quickstart|tensor_parallel|bad_input_gpu_test|binding_gpu_test|block_snapshot_gpu_test|check_gpu_test|concurrent_votes_gpu_test|conditional_capture_gpu_test|conditional_errors_gpu_test|consensus_gpu_test|constants_gpu_test|control_flow_gpu_test|cublas_binding_gpu_test|device_check_kernel_test|device_diff_gpu_test|eager_control_gpu_test|graph_arena_gpu_test|graph_smoke_test|graph_walk_gpu_test|large_region_gpu_test|manager_gpu_test|masked_copy_test|never_silent_gpu_test|observability_gpu_test|philox_test|read_scalar_test|region_checksums_gpu_test|replay_path_gpu_test|serving_gpu_test|shims_in_method_gpu_test|stages_gpu_test|verify_gpu_test)$' ) > $OUT/racecheck.log 2>&1
for f in /tmp/rc/*.log; do n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"; done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T1 )) s" >> $OUT/racecheck.log
echo done
