#!/usr/bin/env bash
# Run E (2026-12-02, second session): diagnostics for issues 23, 25, 26.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
{
echo "=== sanitizer options"; $CS --version 2>&1 | tail -2; $CS --help 2>&1 | grep -B1 -A4 -E "target-processes|--print-limit" | head -30
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 4"; timeout 60 $G/bench/stages_micro 4 2>&1 | grep -v " info encore "
echo "=== capture_bench"; timeout 120 $G/bench/capture_bench 2>&1
echo "=== capture_bench --kernels 1000 256"; timeout 120 $G/bench/capture_bench --kernels 1000 256 2>&1
} > $OUT/bench.log 2>&1
{
echo "=== soak heap_trace 300000"; HEAP_TRACE_OUT=$OUT/heap.txt LD_PRELOAD=$PWD/carry/heap_trace.so timeout 120 $G/bench/soak --calls 300000; echo "soak rc=$?"
} > $OUT/soak.log 2>&1
{
echo "=== memcheck check binaries"; ( OUT=/tmp/mc timeout 200 bash $G/tools/gpu_suite.sh run --memcheck --filter '^(check_gpu_test|device_check_kernel_test)$' --timeout 90 ) 2>&1 | tail -8
mkdir -p $OUT/mc; cp /tmp/mc/*.log $OUT/mc/ 2>/dev/null
echo "=== racecheck sample"; T0=$(date +%s); ( OUT=/tmp/rc timeout 200 bash $G/tools/gpu_suite.sh run --racecheck --filter 'replay_path|region_checksums|device_diff|block_snapshot' --timeout 90 ) 2>&1 | tail -8; echo "racecheck sample took $(( $(date +%s) - T0 )) s"
mkdir -p $OUT/rc; cp /tmp/rc/*.log $OUT/rc/ 2>/dev/null
} > $OUT/sanitizer.log 2>&1
echo done
