#!/usr/bin/env bash
# Run R (2026-12-03, seventh session): the GPU suite at the commit that
# stops gpu_suite.sh from giving the serving example 1,001 calls per way
# under a sanitizer (run Q: past 510 s under racecheck), then the serving
# example alone under racecheck, with its log kept.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
START=$(date +%s)
( OUT=/tmp/suite_res timeout 200 bash $G/tools/gpu_suite.sh run --timeout 90 ) > $OUT/suite.log 2>&1
grep -h -B30 "^\[  FAILED  \]" /tmp/suite_res/*.log 2>/dev/null | head -200 > $OUT/failures.txt
echo "suite took $(( $(date +%s) - START )) s" >> $OUT/suite.log
T2=$(date +%s)
LEFT=$(( ${CAP:-540} - (T2 - START) ))
( OUT=/tmp/rc/serving timeout $LEFT bash $G/tools/gpu_suite.sh run --racecheck --timeout $(( LEFT - 10 )) --filter '^serving$' ) > $OUT/racecheck.log 2>&1
for f in /tmp/rc/*/*.log; do
  n=$(grep -h "RACECHECK SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"
  cp "$f" $OUT/racecheck_$(basename $f)
done > $OUT/racecheck_per_binary.txt
echo "racecheck took $(( $(date +%s) - T2 )) s of $LEFT" >> $OUT/racecheck.log
echo done
