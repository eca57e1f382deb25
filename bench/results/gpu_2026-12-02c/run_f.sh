#!/usr/bin/env bash
# Run F (2026-12-02, third session): the whole GPU suite under
# compute-sanitizer racecheck (trap-mode tests skip under it, saying why).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
( OUT=/tmp/rc timeout 560 bash $G/tools/gpu_suite.sh run --racecheck --timeout 200 ) > $OUT/racecheck.log 2>&1
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/rc/*.log | sort | uniq -c > $OUT/racecheck_summaries.txt
echo done
