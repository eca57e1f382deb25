#!/usr/bin/env bash
# Run J (2026-12-02, fourth session): the GPU suite at the third session's
# last code (review mends and the one stopwatch, never run on the GPU),
# stages_micro at K=64 and 1, a CPU profile of the K=64 replay, and the
# serving example alone under memcheck (its shortest trace).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
T0=$(date +%s)
( OUT=/tmp/suite_res timeout 280 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
echo "suite took $(( $(date +%s) - T0 )) s" >> $OUT/suite.log
{
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 1"; timeout 60 $G/bench/stages_micro 1 2>&1 | grep -v " info encore "
} > $OUT/bench.log 2>&1
CPU_SAMPLER_OUT=$OUT/prof64.txt LD_PRELOAD=$PWD/carry/cpu_sampler.so carry/stages_micro_unstripped 64 --profile 200000 > $OUT/prof64_run.txt 2>&1
T1=$(date +%s)
( OUT=/tmp/mc timeout 170 bash $G/tools/gpu_suite.sh run --memcheck --filter '^serving$' --timeout 160 ) > $OUT/memcheck_serving.log 2>&1
tail -40 /tmp/mc/example_serving.log > $OUT/memcheck_serving_tail.txt 2>&1
echo "memcheck serving took $(( $(date +%s) - T1 )) s" >> $OUT/memcheck_serving.log
echo done
