#!/usr/bin/env bash
# Run A: GPU suite + benches + diagnosis, one lease.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > $OUT/bench.log
( OUT=/tmp/suite_res timeout 330 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
tar czf $OUT/results.tgz -C /tmp suite_res 2>/dev/null
{
echo "=== stages_micro 64"; timeout 60 $G/bench/stages_micro 64
echo "=== capture_bench"; timeout 100 $G/bench/capture_bench 256 8192
echo "=== binding_micro 1 (a)"; timeout 40 $G/bench/binding_micro 1
echo "=== binding_micro 1 (b)"; timeout 40 $G/bench/binding_micro 1
echo "=== soak 1000000"; timeout 60 $G/bench/soak --calls 1000000; echo "soak rc=$?"
echo "=== soak mtrace 300000"; MALLOC_TRACE=/tmp/mtrace.log SOAK_MAPS=/tmp/soak.maps LD_PRELOAD=libc_malloc_debug.so.0 timeout 90 $G/bench/soak --calls 300000; echo "soak rc=$?"
python3 tools/mtrace_summary.py /tmp/mtrace.log /tmp/soak.maps 2>&1 | head -60
echo "=== gdb"; which gdb compute-sanitizer
if which gdb >/dev/null; then timeout 60 gdb -batch -ex run -ex bt -ex "info sharedlibrary" --args carry/cond_test --gtest_filter='*BreaksItsOwnCapture*' 2>&1 | tail -60; fi
timeout 60 compute-sanitizer --show-backtrace host carry/cond_test --gtest_filter='*BreaksItsOwnCapture*' 2>&1 | tail -40
} > $OUT/bench2.log 2>&1
cat $OUT/bench2.log >> $OUT/bench.log; rm $OUT/bench2.log
