#!/usr/bin/env bash
# Run D (2026-12-02, third session): the GPU suite after direct-first
# captures (one instantiation) and the early probe bind; stages_micro,
# binding_micro, capture_bench, the soak.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
( OUT=/tmp/suite_res timeout 300 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
{
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== binding_micro 1"; timeout 60 $G/bench/binding_micro 1 2>&1 | tail -25
echo "=== capture_bench"; timeout 150 $G/bench/capture_bench 256 8192
echo "=== capture_bench --kernels 1000"; timeout 90 $G/bench/capture_bench --kernels 1000 256
echo "=== soak"; timeout 120 $G/bench/soak | cut -c1-260; echo "soak rc=$?"
} > $OUT/bench.log 2>&1
grep -h -B2 -A25 "\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -150 > $OUT/failures.txt
echo done
