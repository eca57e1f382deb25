#!/usr/bin/env bash
# Run G (2026-12-02, third session): the GPU suite after the direct-first
# fix, stages_micro, capture_bench, binding_micro, the soak (with its
# [heap] split) and a CPU profile of a one-kernel-per-piece replay.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
( OUT=/tmp/suite_res timeout 300 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
{
echo "=== soak"; SOAK_SMAPS=/tmp/smaps timeout 120 carry/soak_unstripped | cut -c1-300; echo "soak rc=$?"
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 1"; timeout 60 $G/bench/stages_micro 1 2>&1 | grep -v " info encore "
echo "=== binding_micro 1"; timeout 60 $G/bench/binding_micro 1 2>&1 | tail -25
echo "=== capture_bench"; timeout 150 $G/bench/capture_bench 256 8192
echo "=== capture_bench --kernels 1000"; timeout 90 $G/bench/capture_bench --kernels 1000 256
} > $OUT/bench.log 2>&1
CPU_SAMPLER_OUT=$OUT/prof.txt LD_PRELOAD=$PWD/carry/cpu_sampler.so timeout 60 carry/stages_micro_unstripped 1 --profile 1500000 > /dev/null 2>&1
cp /tmp/smaps.warm /tmp/smaps.end $OUT/ 2>/dev/null
echo done
