#!/usr/bin/env bash
# Run A (2026-12-02, third session): the GPU suite, stages_micro (pieces with
# no record node), capture_bench with the probe's sub-phases, the driver's
# heap per instantiation (instantiate_heap) and the soak.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
{
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== instantiate_heap"; timeout 60 $G/bench/instantiate_heap --rounds 2000 --every 200
echo "=== instantiate_heap --update"; timeout 60 $G/bench/instantiate_heap --rounds 2000 --every 200 --update
echo "=== soak"; timeout 120 $G/bench/soak; echo "soak rc=$?"
echo "=== binding_micro 1"; timeout 60 $G/bench/binding_micro 1 2>&1 | tail -25
echo "=== capture_bench"; timeout 150 $G/bench/capture_bench 256 8192
echo "=== capture_bench --kernels 1000"; timeout 90 $G/bench/capture_bench --kernels 1000 256
} > $OUT/bench.log 2>&1
( OUT=/tmp/suite_res timeout 240 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
cp /tmp/suite_res/*.xml $OUT/ 2>/dev/null
echo done
