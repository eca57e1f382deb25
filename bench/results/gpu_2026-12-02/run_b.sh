#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
TORCH_SUITE_BUDGET=${TORCH_SUITE_BUDGET:-400} ENCORE_DEPS=$PWD/torch_deps timeout 560 bash tools/torch_suite.sh run --build /tmp/tb > $OUT/torch_console.log 2>&1
echo "torch rc=$?" >> $OUT/torch_console.log
