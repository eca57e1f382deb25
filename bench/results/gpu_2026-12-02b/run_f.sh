#!/usr/bin/env bash
# Run F (2026-12-02, second session): the GPU suite at HEAD, the suite under
# memcheck and racecheck, the soak's heap profile, stages_micro.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
( OUT=/tmp/suite_res timeout 200 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
{
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== soak heap_trace 300000"; MALLOC_TRACE=1 HEAP_TRACE_OUT=$OUT/heap.txt LD_PRELOAD=$PWD/carry/heap_trace.so timeout 120 $G/bench/soak --calls 300000; echo "soak rc=$?"
} > $OUT/bench.log 2>&1
( OUT=/tmp/mc timeout 290 bash $G/tools/gpu_suite.sh run --memcheck --filter '_test$' --timeout 200 ) > $OUT/memcheck.log 2>&1
echo done
