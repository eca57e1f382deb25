#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU code nvcc put in an object equals what //tools:cuda_archs asked for,
# and kBuiltCudaArchs (which "no kernel image" errors quote) says the same.
#   cuda_archs_test.sh FATBIN_ARCHS_PY NVCC_OBJECT CUDA_ARCHS_H
set -euo pipefail
py="$1" object="$2" header="$3"

built="$(sed -n 's/.*kBuiltCudaArchs = "\(.*\)";/\1/p' "$header")"
[[ -n "$built" ]] || { echo "no kBuiltCudaArchs in $header"; exit 1; }
found="$(python3 "$py" "$object")"
sorted() { tr ' ' '\n' <<<"$1" | sort -u | tr '\n' ' '; }
echo "kBuiltCudaArchs: $built"
echo "in the object:   $found"
if [[ "$(sorted "$built")" != "$(sorted "$found")" ]]; then
  echo "FAIL: the object's GPU code differs from kBuiltCudaArchs"
  exit 1
fi
# An expected list from the environment (tools/cuda12_check.sh, CI) pins it.
if [[ -n "${ENCORE_EXPECT_CUDA_ARCHS:-}" && "$(sorted "$ENCORE_EXPECT_CUDA_ARCHS")" != "$(sorted "$built")" ]]; then
  echo "FAIL: expected $ENCORE_EXPECT_CUDA_ARCHS"
  exit 1
fi
echo "PASS"
