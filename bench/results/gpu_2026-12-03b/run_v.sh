#!/usr/bin/env bash
# Run V (2026-12-03, seventh session): stages_micro at K=64, two rounds,
# with the floor's graphs also on out_rec without a tail, to tell the
# tails' +10 µs end to end (runs O, T, U) from the output buffer's.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
for round in 1 2; do
  echo "=== round $round: stages_micro 64"
  timeout 60 $G/bench/stages_micro 64 2>&1 | grep -v " info encore "
  cp $OUT/stages_micro.json $OUT/stages_micro_r${round}_k64.json 2>/dev/null
done > $OUT/stages_micro.log 2>&1
rm -f $OUT/stages_micro.json
echo done
