#!/usr/bin/env bash
# Run Q (2026-12-03, seventh session): the two binaries issue 25's racecheck
# still lacks, after their sanitizer runs were shortened. First the three
# binaries changed since the last full suite, without the tool (they must
# still pass); then quickstart and serving under racecheck, at once, each
# with its own log kept.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
START=$(date +%s)
F='^(fault_matrix_gpu_test|quickstart|serving)$'
( OUT=/tmp/plain timeout 100 bash $G/tools/gpu_suite.sh run --timeout 90 --filter "$F" ) > $OUT/plain.log 2>&1
echo "plain took $(( $(date +%s) - START )) s" >> $OUT/plain.log
T2=$(date +%s)
LEFT=$(( ${CAP:-540} - (T2 - START) ))
for b in quickstart serving; do
  ( OUT=/tmp/rc/$b timeout $LEFT bash $G/tools/gpu_suite.sh run --racecheck --timeout $(( LEFT - 10 )) --filter "^$b\$" ) > /tmp/rc_$b.log 2>&1 &
done
wait
cat /tmp/rc_*.log > $OUT/racecheck.log
for f in /tmp/rc/*/*.log; do
  n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"
  { echo "=== $(basename $f)"; grep -h -A12 "Failure\|FAILED\|differs\|TARGET\|error" "$f" | head -80; tail -8 "$f"; } >> $OUT/racecheck_details.txt
done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T2 )) s of $LEFT" >> $OUT/racecheck.log
echo done
