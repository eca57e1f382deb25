#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/encore_report.py renders a report (a file, stdin, or a log holding it)
# as one table per method, and fails clearly on input without one.
set -uo pipefail
script="$1"
report="$2"
fail=0
check() {  # check NAME OUTPUT PATTERN...
  local name="$1" out="$2"
  shift 2
  for pat in "$@"; do
    if ! grep -qF -- "$pat" <<<"$out"; then
      echo "FAIL: $name: missing: $pat"
      echo "$out"
      fail=1
    fi
  done
}

out="$(python3 "$script" "$report")" || { echo "FAIL: file input exited $?"; fail=1; }
check file "$out" \
  "encore 0.2.0 (report schema 1): 2 methods" \
  "method decode" "method forward" \
  "phase          replay" \
  "calls          12   (warmup 3, replays 7, eager 0, refused 2)" \
  "graphs         2 kept, 1 captured, 1 recaptured, 0 failed, 4 nodes in the latest" \
  "capture time   1500 us total, 700 us last" \
  "eager          2 calls; graphs off: capture failed at method: ReadScalar refused inside a capture" \
  "memory         reserved 2.0 MiB, live 1.0 MiB, peak 1.5 MiB" \
  "input shapes   ([2,3,4,4]) ([8])"

# The same report on stdin, inside a program's output.
out="$( { echo "event=captured method=forward"; printf 'report: '; cat "$report"; echo "done"; } | python3 "$script")" ||
  { echo "FAIL: stdin input exited $?"; fail=1; }
check stdin "$out" "method forward" "capture time   1500 us total, 700 us last"

# Padding to buckets and graph memory show when present.
out="$(echo '{"methods":[{"name":"s","flags":{"on_new_shape":"pad","buckets":[]},"buckets":[7,28,256],"real_rows":30,"padded_rows":10,"bucket_changes":2,"graph_memory_bytes":1048576,"budget_drops":1,"over_budget_calls":3,"precaptures":4}]}' |
  python3 "$script")"
check pad "$out" "buckets        7|28|256 (learned, 2 changes); rows 30 real, 10 padded (25.0%)" \
  "graph memory   1.0 MiB; 1 graphs dropped, 3 calls eager for the budget; 4 precaptured"

# Keys from other encore versions (binding, verification) show when present.
out="$(echo '{"methods":[{"name":"f","binding":"direct","rebind_sites":3,"binding_reason":"","verified_launches":4,"verify_failures":0}]}' |
  python3 "$script")"
check newer "$out" "binding        direct, 3 rebind sites" "verification   4 launches checked, 0 mismatches" \
  "encore ? (report schema ?): 1 method"

# No report: exit 2 and say so.
err="$(echo "no report here" | python3 "$script" 2>&1 >/dev/null)"
rc=$?
echo "no report here" | python3 "$script" >/dev/null 2>&1
if [[ $? -ne 2 ]]; then echo "FAIL: no report: want exit 2"; fail=1; fi
check noreport "$err" 'no JSON object with "methods" found'

if [[ $fail -eq 0 ]]; then echo "PASS"; fi
exit $fail
