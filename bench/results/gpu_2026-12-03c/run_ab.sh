#!/usr/bin/env bash
# Run AB (2026-12-03, eighth session): stages_micro 64, one round, with the
# floor's executables given their kernel parameters in place after a
# launch had finished, or while it ran (what separates encore's rewrites,
# which run at full speed, from the slow ones).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
timeout 90 $G/bench/stages_micro 64 2>&1 | grep -v " info encore " > $OUT/stages_micro.log
rm -f $OUT/*.json
echo done
