#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# encore against CUDA 12, on a machine whose toolkit is CUDA 13.
#
#   tools/cuda12_check.sh [--compile-only] [VERSION[:compile-only]...]
#       VERSION: 12.4 or 12.9 (default: both). For each: builds every C++
#       target (//..., GPU tests, examples and benchmarks included) against
#       that CUDA's runtime headers and runtime library, then runs every test
#       not tagged `gpu`. --compile-only (all versions) or VERSION:compile-only
#       (that one) builds and runs no test. The last line is
#       `N passed, N failed, N skipped` over all versions; exits non-zero on a
#       failure.
#   tools/cuda12_check.sh stage VERSION DIR [--no-bench] [BAZEL_FLAGS...]
#       Builds like `tools/gpu_suite.sh build` against that CUDA and stages
#       the GPU binaries into DIR, for `DIR/tools/gpu_suite.sh run` on a GPU
#       machine (a CUDA 13 driver runs CUDA 12 binaries).
#
# Where CUDA 12 comes from: PyPI's wheels, downloaded once with pip into
# $ENCORE_CUDA12_CACHE (default ~/.cache/encore_cuda12): nvidia-cuda-runtime-cu12
# (headers, libcudart_static.a; 12.4's wheel has only libcudart.so.12, so
# 12.4 links the shared runtime: --//tools:cudart=shared), nvidia-cuda-cccl-cu12
# (CCCL headers), nvidia-nvtx-cu12 (NVTX3 headers) and the crt/ headers of
# nvidia-cuda-nvcc-cu12. That wheel has ptxas and libNVVM but no nvcc driver, so
# no CUDA 12 compiler exists here: the .cu kernels are compiled by the
# toolkit's nvcc ($ENCORE_NVCC, default /usr/local/cuda/bin/nvcc) with its own
# headers, as a CUDA 12 user's would be by theirs, and linked with CUDA 12's
# runtime. The C++ code (every .cc file) sees only CUDA 12's headers.
#
# Bazel runs on a copy of this tree (git's files and uncommitted changes, no
# bazel-* links) under the cache folder, with its own output base, so the main
# build's outputs are left alone; @cuda points at the CUDA 12 tree through
# CUDA_PATH and ENCORE_NVCC (see third_party/cuda/cuda_configure.bzl).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo_root="$(pwd)"

say() { echo "cuda12_check: $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

cache="${ENCORE_CUDA12_CACHE:-$HOME/.cache/encore_cuda12}"
nvcc="${ENCORE_NVCC:-/usr/local/cuda/bin/nvcc}"

# VERSION -> the wheels (pinned: the check is reproducible) and whether its
# runtime wheel has libcudart_static.a.
wheels_for() {
  case "$1" in
    12.4) echo "nvidia-cuda-runtime-cu12==12.4.127 nvidia-cuda-cccl-cu12==12.4.127.post1 nvidia-cuda-nvcc-cu12==12.4.131 nvidia-nvtx-cu12==12.4.127" ;;
    12.9) echo "nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-cccl-cu12==12.9.27 nvidia-cuda-nvcc-cu12==12.9.86 nvidia-nvtx-cu12==12.9.79" ;;
    *) return 1 ;;
  esac
}

# Downloads and unpacks VERSION's wheels and lays them out as a toolkit tree
# (include/, lib64/); prints the tree's path. Done once per cache folder.
cuda_tree() {
  local version="$1" specs tree="$cache/cuda-$1"
  specs="$(wheels_for "$version")" || die "unknown CUDA version '$version' (known: 12.4, 12.9)"
  if [[ -f "$tree/.complete" ]]; then echo "$tree"; return 0; fi
  command -v python3 >/dev/null || die "python3 (with pip) is needed to download CUDA $version's wheels"
  command -v unzip >/dev/null || die "unzip is needed to unpack CUDA $version's wheels (apt-get install unzip)"
  local wheels="$cache/wheels" spec
  mkdir -p "$wheels" || die "cannot create $wheels"
  for spec in $specs; do
    say "pip download $spec"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$wheels" \
      --platform "manylinux2014_$(uname -m)" "$spec" >&2 ||
      die "pip could not download $spec (network, or a pip index that lacks it)"
  done
  rm -rf "$tree" "$tree.tmp"
  mkdir -p "$tree.tmp/unpacked" "$tree.tmp/include" "$tree.tmp/lib64"
  for spec in $specs; do
    local name="${spec%%==*}" ver="${spec##*==}" whl
    whl="$(ls "$wheels/${name//-/_}-$ver-"*.whl 2>/dev/null | head -n1)"
    [[ -n "$whl" ]] || die "no wheel for $spec in $wheels"
    unzip -q -o "$whl" -d "$tree.tmp/unpacked/$name" || die "cannot unpack $whl"
  done
  local u="$tree.tmp/unpacked"
  cp -r "$u/nvidia-cuda-runtime-cu12/nvidia/cuda_runtime/include/." "$tree.tmp/include/" &&
    cp -r "$u/nvidia-cuda-cccl-cu12/nvidia/cuda_cccl/include/." "$tree.tmp/include/" &&
    cp -r "$u/nvidia-cuda-nvcc-cu12/nvidia/cuda_nvcc/include/crt" "$tree.tmp/include/" &&
    cp -r "$u/nvidia-nvtx-cu12/nvidia/nvtx/include/nvtx3" "$tree.tmp/include/" &&
    cp -r "$u/nvidia-cuda-runtime-cu12/nvidia/cuda_runtime/lib/." "$tree.tmp/lib64/" ||
    die "the wheels of CUDA $version are not laid out as expected"
  rm -f "$tree.tmp/include/__init__.py" "$tree.tmp/lib64/__init__.py"
  rm -rf "$u"
  echo "$specs" >"$tree.tmp/.complete"
  mv "$tree.tmp" "$tree" || die "cannot create $tree"
  echo "$tree"
}

# The flags and environment of a build against VERSION's tree.
setup_version() {
  local version="$1"
  tree="$(cuda_tree "$version")" || exit 2
  [[ -x "$nvcc" ]] || die "no nvcc at $nvcc to compile the .cu files (set ENCORE_NVCC)"
  export CUDA_PATH="$tree" ENCORE_NVCC="$nvcc"
  # NCCL_HOME, if set, is honoured as in any build; unset, NCCL is searched for
  # in the CUDA 12 tree and the system, and its targets skipped if absent.
  # Bazel runs on a copy of the tree under the cache, with its own output
  # base (shared by the versions, which differ only in @cuda; the server exits
  # after 10 idle minutes): a second output base in this tree would read the
  # main build's bazel-* links as packages.
  local key
  cd "$repo_root" || exit 2
  key="$(cksum <<<"$repo_root" | cut -d' ' -f1)"
  # What gpu_suite.sh records as the source of a staged folder.
  ENCORE_SOURCE_COMMIT="$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  export ENCORE_SOURCE_COMMIT
  copy="$cache/src/$key"
  rm -rf "$copy" && mkdir -p "$copy" || die "cannot create $copy"
  tar -C . --exclude='./bazel-*' --exclude='./examples/consumer/bazel-*' --exclude='./gpu_bin*' \
    --exclude=./.git --exclude=./.device -cf - . | tar -C "$copy" -xf - || die "cannot copy the tree to $copy"
  cd "$copy" || exit 2
  ENCORE_BAZEL="bazel --output_base=$cache/bazel/$key --max_idle_secs=600"
  export ENCORE_BAZEL
  bazel_flags=(--color=no --curses=no --show_progress_rate_limit=60 --keep_going)
  if [[ -f "$tree/lib64/libcudart_static.a" ]]; then
    cudart=static
  else
    cudart=shared
    bazel_flags+=(--//tools:cudart=shared)
  fi
  cudart_version="$(sed -n 's/^#define CUDART_VERSION *\([0-9]*\).*/\1/p' "$tree/include/cuda_runtime_api.h")"
  say "CUDA $version: CUDART_VERSION $cudart_version, $cudart cudart, from $(tr '\n' ' ' <"$tree/.complete")"
  say "CUDA $version: .cu files by $nvcc ($("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p'))"
}

check_version() {
  local version="$1" compile_only="$2" bep rc
  setup_version "$version"
  local bazel=($ENCORE_BAZEL)
  bep="$(mktemp "${TMPDIR:-/tmp}/encore_cuda12.XXXXXX.json")"
  if ((compile_only)); then
    say "CUDA $version: bazel build //... (compile only)"
    "${bazel[@]}" build "${bazel_flags[@]}" //...
    rc=$?
    tools/nccl_note.sh "cuda12_check: CUDA $version" >&2
    if ((rc == 0)); then
      say "CUDA $version: every target built"
    else
      say "CUDA $version: FAILED: bazel build exited with $rc"
      failed=$((failed + 1))
    fi
    rm -f "$bep"
    return
  fi
  say "CUDA $version: bazel test --config=cpu //..."
  "${bazel[@]}" test --config=cpu "${bazel_flags[@]}" --build_event_json_file="$bep" \
    --test_env=ENCORE_EXPECT_CUDART_VERSION="$cudart_version" //...
  rc=$?
  case "$rc" in
    0 | 3 | 4) ;;
    *) say "CUDA $version: bazel test exited with $rc: the build failed (see the errors above)"
       failed=$((failed + 1)) ;;
  esac
  tools/nccl_note.sh "cuda12_check: CUDA $version" >&2
  local line
  line="$(python3 tools/test_summary.py --bep "$bep" --test_tag_filters=-gpu | tail -n1)"
  rm -f "$bep"
  say "CUDA $version: $line"
  local p f s
  read -r p _ f _ s _ <<<"${line//,/}"
  [[ "$p" =~ ^[0-9]+$ && "$f" =~ ^[0-9]+$ && "$s" =~ ^[0-9]+$ ]] || { failed=$((failed + 1)); return; }
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

do_stage() {
  (($# >= 2)) || die "usage: tools/cuda12_check.sh stage VERSION DIR [--no-bench] [BAZEL_FLAGS...]"
  local version="$1" dir="$2"
  shift 2
  mkdir -p "$dir" && dir="$(cd "$dir" && pwd)" || die "cannot create $dir"
  setup_version "$version"
  GPU_BIN="$dir" tools/gpu_suite.sh build "${bazel_flags[@]}" "$@"
}

mode_args=("$@")
if [[ "${1:-}" == stage ]]; then
  shift
  do_stage "$@"
  exit $?
fi
compile_only=0 versions=()
for arg in "${mode_args[@]}"; do
  case "$arg" in
    --compile-only) compile_only=1 ;;
    -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) versions+=("$arg") ;;
  esac
done
((${#versions[@]})) || versions=(12.4 12.9)
ENCORE_BOOTSTRAP_QUIET=1 tools/bootstrap.sh || exit 1
passed=0 failed=0 skipped=0
for v in "${versions[@]}"; do
  case "$v" in
    *:compile-only) check_version "${v%:compile-only}" 1 ;;
    *) check_version "$v" "$compile_only" ;;
  esac
done
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
