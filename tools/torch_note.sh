#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints one line when the last build skipped the PyTorch adapter
# (//interop/torch): PyTorch was not found, or the build linked the static
# CUDA runtime. Prints nothing when the adapter was built.
#   tools/torch_note.sh PREFIX [BAZEL_FLAGS...]   (the flags the build used)
# $ENCORE_BAZEL replaces the `bazel` command, as in tools/gpu_suite.sh.
set -uo pipefail
prefix="${1:-encore}"
shift || true
bazel=(${ENCORE_BAZEL:-bazel})
defs="$("${bazel[@]}" info output_base 2>/dev/null)/external/torch/defs.bzl"
[[ -f "$defs" ]] || exit 0  # nothing asked for @torch: nothing was skipped for it
targets="//interop/torch:encore_torch and its tests"
if grep -q '^TORCH_FOUND = False' "$defs"; then
  why="$(sed -n 's/^TORCH_WHY_NOT = "\(.*\)"$/\1/p' "$defs")"
  echo "${prefix}: PyTorch not found (${why}); set TORCH_DIR or install torch for python3 to build them: skipped ${targets}"
elif [[ " $* " != *" --//tools:cudart=shared "* && " $* " != *" --@encore//tools:cudart=shared "* ]]; then
  where="$(sed -n 's/^TORCH_DIR = "\(.*\)"$/\1/p' "$defs")"
  echo "${prefix}: PyTorch found at ${where}, but the build links the static CUDA runtime; build with --//tools:cudart=shared for them: skipped ${targets}"
fi
