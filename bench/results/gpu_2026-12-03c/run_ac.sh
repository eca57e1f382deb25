#!/usr/bin/env bash
# Run AC (2026-12-03, eighth session): after the benchmarks' tidy-up
# (ddc72eb), stages_micro 64 and binding_micro 128 once each: the same
# variants, outputs and counts as before.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
timeout 90 $G/bench/stages_micro 64 2>&1 | grep -v " info encore " > $OUT/stages_micro.log
timeout 90 $G/bench/binding_micro 128 2>&1 | grep -v " info encore " > $OUT/binding_micro.log
rm -f $OUT/*.json
echo done
