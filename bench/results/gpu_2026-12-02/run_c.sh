#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
{
echo "=== device_loop (fixed)"; timeout 120 carry/device_loop 2>&1 | grep -v " info encore "; echo "device_loop rc=${PIPESTATUS[0]}"
echo "=== soak mtrace 300000"; MALLOC_TRACE=/tmp/mtrace.log SOAK_MAPS=/tmp/soak.maps LD_PRELOAD=libc_malloc_debug.so.0 timeout 90 $G/bench/soak --calls 300000; echo "soak rc=$?"
python3 tools/mtrace_summary.py /tmp/mtrace.log /tmp/soak.maps 2>&1 | head -40
grep -c . /tmp/mtrace.log
} > $OUT/run_c.log 2>&1
