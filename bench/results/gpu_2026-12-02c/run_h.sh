#!/usr/bin/env bash
# Run H (2026-12-02, third session): the soak with its second-half baseline,
# then the whole GPU suite under compute-sanitizer memcheck (trap-mode tests
# skip under it, saying why).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/g && rm -rf /tmp/g/gpu_bin && tar xJf carry/gpu_bin.tar.xz -C /tmp/g
G=/tmp/g/gpu_bin
{ echo "=== soak"; timeout 60 carry/soak_unstripped | cut -c1-300; echo "soak rc=$?"; } > $OUT/soak.log 2>&1
( OUT=/tmp/mc timeout 520 bash $G/tools/gpu_suite.sh run --memcheck --timeout 240 ) > $OUT/memcheck.log 2>&1
grep -h "ERROR SUMMARY" /tmp/mc/*.log | sort | uniq -c > $OUT/memcheck_summaries.txt
for f in /tmp/mc/*.log; do n=$(grep -h "ERROR SUMMARY" "$f" | tail -1); echo "$(basename $f): ${n:-no summary}"; done > $OUT/memcheck_per_binary.txt
echo done
