#!/usr/bin/env bash
# Run Y (2026-12-03, eighth session): stages_micro with the floor's graphs
# also made as graph/binding's direct form makes its executables (kernel
# parameters set again on a clone before instantiating, or on the
# executable), two rounds at K=64 and K=1.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
for round in 1 2; do
  for k in 64 1; do
    echo "=== round $round: stages_micro $k"
    timeout 60 $G/bench/stages_micro $k 2>&1 | grep -v " info encore "
  done
done > $OUT/stages_micro.log 2>&1
rm -f $OUT/stages_micro.json
echo done
