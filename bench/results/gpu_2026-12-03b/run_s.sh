#!/usr/bin/env bash
# Run S (2026-12-03, seventh session): the serving example at 40 calls per
# way under a sanitizer (run R's 8 left its learned way eager throughout),
# under racecheck and memcheck at once, each log kept; then without the
# tool; then stages_micro at 64 and 1 kernels per piece, for this host.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
START=$(date +%s)
for tool in racecheck memcheck; do
  ( OUT=/tmp/san/$tool timeout 400 bash $G/tools/gpu_suite.sh run --$tool --timeout 390 --filter '^serving$' ) > /tmp/san_$tool.log 2>&1 &
done
wait
for tool in racecheck memcheck; do
  cat /tmp/san_$tool.log; cp /tmp/san/$tool/example_serving.log $OUT/${tool}_example_serving.log
  grep -h "SUMMARY" /tmp/san/$tool/example_serving.log | tail -1
done > $OUT/sanitizers.log 2>&1
echo "sanitizers took $(( $(date +%s) - START )) s" >> $OUT/sanitizers.log
( OUT=/tmp/plain timeout 100 bash $G/tools/gpu_suite.sh run --timeout 90 --filter '^serving$' ) > $OUT/plain.log 2>&1
cp /tmp/plain/example_serving.log $OUT/plain_example_serving.log
{
echo "=== stages_micro 64"; timeout 40 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
echo "=== stages_micro 1"; timeout 40 $G/bench/stages_micro 1 2>&1 | grep -v " info encore "
} > $OUT/stages_micro.log 2>&1
echo done
