#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
( OUT=/tmp/suite_res timeout 300 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
tar czf $OUT/results.tgz -C /tmp suite_res 2>/dev/null
{
echo "=== device_loop_micro"; timeout 90 $G/bench/device_loop_micro 2>&1 | grep -v " info encore "
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== memcheck replay_path"; ( OUT=/tmp/mc timeout 150 bash $G/tools/gpu_suite.sh run --memcheck --filter 'replay_path|never_silent' --timeout 120 ) 2>&1 | tail -8
} > $OUT/bench.log 2>&1
