#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints one line when the last build had no NCCL: which targets it skipped
# and how to get them. Prints nothing when NCCL was found.
#   tools/nccl_note.sh PREFIX     (PREFIX starts the line, e.g. "run_tests")
# $ENCORE_BAZEL replaces the `bazel` command, as in tools/gpu_suite.sh.
set -uo pipefail
bazel=(${ENCORE_BAZEL:-bazel})
defs="$("${bazel[@]}" info output_base 2>/dev/null)/external/cuda/defs.bzl"
grep -q '^NCCL_FOUND = False' "$defs" 2>/dev/null || exit 0
skipped="$("${bazel[@]}" query --noshow_progress 'rdeps(//..., @cuda//:nccl)' 2>/dev/null | grep -v '^@' | tr '\n' ' ')"
searched="$(sed -n 's/^NCCL_SEARCHED = \[\(.*\)\]/\1/p' "$defs" | tr -d '"')"
echo "${1:-encore}: NCCL not found (searched ${searched}); set NCCL_HOME to build them: skipped ${skipped% }"
