#!/usr/bin/env bash
# Run I (2026-12-02, third session): compute-sanitizer racecheck over the
# binaries whose kernels use shared memory or the checksum, snapshot and
# staging kernels (the device time left did not cover the whole suite).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
( OUT=/tmp/rc timeout 215 bash /tmp/g/gpu_bin/tools/gpu_suite.sh run --racecheck --timeout 120 \
    --filter 'region_checksums|block_snapshot|large_region|masked_copy|binding_gpu|shims|stages_gpu|device_diff' ) \
  > $OUT/racecheck.log 2>&1
grep -h "RACECHECK SUMMARY" /tmp/rc/*.log | sort | uniq -c
