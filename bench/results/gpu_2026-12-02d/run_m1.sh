#!/usr/bin/env bash
# Run M1 (2026-12-03, fifth session): racecheck over the binaries run L did
# not reach in its 420 s, and graph_arena_gpu_test (which outlasted 150 s
# there) without its 10,000-replay test.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
T0=$(date +%s)
( OUT=/tmp/rc1 timeout 330 bash $G/tools/gpu_suite.sh run --racecheck --timeout 150 --filter '^(checks|decode|device_loop|fallback|host_flag|piecewise_block|quickstart|tensor_parallel|philox_test|read_scalar_test|region_checksums_gpu_test|replay_path_gpu_test|serving_gpu_test|shims_in_method_gpu_test|stages_gpu_test|verify_gpu_test)$' ) > $OUT/racecheck.log 2>&1
for f in /tmp/rc1/*.log; do n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"; done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T0 )) s" >> $OUT/racecheck.log
T1=$(date +%s)
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
ENCORE_SANITIZER=racecheck timeout 100 $CS --tool racecheck --error-exitcode 99 $G/tests/graph_arena_gpu_test --gtest_filter=-GraphArenaGpuTest.ReplaysNeverGrowMemory > $OUT/graph_arena_racecheck.log 2>&1
echo "graph_arena rc=$? took $(( $(date +%s) - T1 )) s" >> $OUT/graph_arena_racecheck.log
echo done
