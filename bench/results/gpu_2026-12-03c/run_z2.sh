#!/usr/bin/env bash
# Run Z2 (2026-12-03, eighth session): run Z with one more variant, the
# executable given its parameters again and then uploaded (cudaGraphUpload).
# One round at K=64, one at K=1.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
for run in "1 64" "1 1"; do
  set -- $run
  echo "=== round $1: stages_micro $2"
  timeout 60 $G/bench/stages_micro $2 2>&1 | grep -v " info encore "
done > $OUT/stages_micro.log 2>&1
rm -f $OUT/stages_micro.json
echo done
