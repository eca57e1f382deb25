#!/usr/bin/env bash
# Run P (2026-12-03, sixth session): the four binaries run O's racecheck
# left unfinished or failing, after the fixes it called for: first without
# the tool (they must still pass), then under racecheck, four at once, with
# each binary's log kept.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
START=$(date +%s)
F='^(graph_arena_gpu_test|fault_matrix_gpu_test|quickstart|serving)$'
# SKIP_PLAIN=1 leaves out the run without the tool (the changes since run
# O's suite take effect under a sanitizer only) when device time is short.
if [ -z "${SKIP_PLAIN:-}" ]; then
  ( OUT=/tmp/plain timeout 90 bash $G/tools/gpu_suite.sh run --timeout 80 --filter "$F" ) > $OUT/plain.log 2>&1
  echo "plain took $(( $(date +%s) - START )) s" >> $OUT/plain.log
fi
T2=$(date +%s)
LEFT=$(( ${CAP:-370} - (T2 - START) ))
for b in graph_arena_gpu_test fault_matrix_gpu_test quickstart serving; do
  ( OUT=/tmp/rc/$b timeout $LEFT bash $G/tools/gpu_suite.sh run --racecheck --timeout $(( LEFT - 10 )) --filter "^$b\$" ) > /tmp/rc_$b.log 2>&1 &
done
wait
cat /tmp/rc_*.log > $OUT/racecheck.log
for f in /tmp/rc/*/*.log; do
  n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"
  { echo "=== $(basename $f)"; grep -h -A12 "Failure\|FAILED\|differs\|TARGET\|error" "$f" | head -80; tail -5 "$f"; } >> $OUT/racecheck_details.txt
done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T2 )) s of $LEFT" >> $OUT/racecheck.log
echo done
