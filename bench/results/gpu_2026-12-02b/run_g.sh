#!/usr/bin/env bash
# Run G: the test binaries under racecheck.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/g && [[ -d /tmp/g/gpu_bin ]] || tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
( OUT=/tmp/rc timeout 560 bash $G/tools/gpu_suite.sh run --racecheck --filter '_test$' --timeout 200 ) > $OUT/racecheck.log 2>&1
echo done
