#!/usr/bin/env bash
# Makes a fresh Debian 12 machine ready to build and test encore, and does
# nothing on a machine that already is. Safe to run again and again.
#
# From Debian (installed with apt-get when missing):
#   bazel-bootstrap  Bazel 4.2.3, the build tool (builds offline, no downloads)
#   libspdlog-dev    spdlog headers (/usr/include/spdlog): encore's logger
#   libfmt-dev       fmt headers (/usr/include/fmt): spdlog's formatter
#   libgtest-dev     GoogleTest (/usr/lib/x86_64-linux-gnu/libgtest.a): unit tests
#   libgmock-dev     GoogleMock (/usr/lib/x86_64-linux-gnu/libgmock.a): unit tests
#   python3          summarizes test results (tools/test_summary.py)
# Not from apt: the CUDA toolkit (nvcc, cuda_runtime.h, static cudart), found at
# $CUDA_PATH or /usr/local/cuda. This script checks for it and stops if absent.
#
# Set ENCORE_BOOTSTRAP_QUIET=1 to print nothing when everything is present.
set -euo pipefail

say() { echo "bootstrap: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# package | what must exist afterwards (a command name or an absolute path) | why
REQUIREMENTS=(
  "bazel-bootstrap|bazel|Bazel 4.2.3, the build tool"
  "libspdlog-dev|/usr/include/spdlog/spdlog.h|spdlog headers, encore's logger"
  "libfmt-dev|/usr/include/fmt/format.h|fmt headers, used by spdlog"
  "libgtest-dev|/usr/lib/x86_64-linux-gnu/libgtest.a|GoogleTest static library, for the unit tests"
  "libgmock-dev|/usr/lib/x86_64-linux-gnu/libgmock.a|GoogleMock static library, for the unit tests"
  "python3|python3|Python 3, summarizes test results"
)

present() {
  case "$1" in
    /*) [[ -e "$1" ]] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing_pkgs=()
for req in "${REQUIREMENTS[@]}"; do
  IFS='|' read -r pkg want why <<<"$req"
  if ! present "$want"; then
    missing_pkgs+=("$pkg")
    say "missing: $want -> will install Debian package '$pkg' ($why)"
  fi
done

if ((${#missing_pkgs[@]})); then
  command -v apt-get >/dev/null 2>&1 ||
    die "apt-get is not available, so ${missing_pkgs[*]} cannot be installed here. encore's build expects Debian 12 (bookworm); install those packages (or their equivalents) by hand and run this again."
  SUDO=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 ||
      die "not root and sudo is not installed; as root run: apt-get install -y ${missing_pkgs[*]}"
    SUDO=(sudo)
  fi
  say "installing with apt-get: ${missing_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine's package lists may be empty or stale: update only when an
  # install attempt cannot find what it needs.
  if ! "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing_pkgs[@]}"; then
    say "install failed; refreshing package lists (apt-get update) and retrying"
    "${SUDO[@]}" apt-get update ||
      die "apt-get update failed (no network or no Debian mirror?)"
    "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing_pkgs[@]}" ||
      die "apt-get install ${missing_pkgs[*]} failed"
  fi
  for req in "${REQUIREMENTS[@]}"; do
    IFS='|' read -r pkg want why <<<"$req"
    present "$want" || die "package '$pkg' is installed but '$want' is still missing"
  done
fi

# encore's WORKSPACE is written for Bazel 4.2.3 (Debian's bazel-bootstrap).
bazel_version="$(bazel --version 2>/dev/null || true)"
case "$bazel_version" in
  "bazel 4.2."* | "bazel no_version") ;; # Debian's build says no_version
  *) say "warning: found '${bazel_version:-an unknown bazel}' at $(command -v bazel); encore is built and tested with Bazel 4.2.3 (Debian's bazel-bootstrap)" ;;
esac

# The CUDA toolkit: needed to compile (nvcc) and link (static cudart) even on a
# machine with no GPU. It cannot come from apt here; point CUDA_PATH at one.
if [[ -n "${CUDA_PATH:-}" ]]; then
  cuda_root="$CUDA_PATH" cuda_from="from \$CUDA_PATH"
else
  cuda_root=/usr/local/cuda cuda_from="the default; set CUDA_PATH to use another"
fi
cuda_missing=()
for f in bin/nvcc include/cuda_runtime.h lib64/libcudart_static.a; do
  [[ -e "$cuda_root/$f" ]] || cuda_missing+=("$cuda_root/$f")
done
if ((${#cuda_missing[@]})); then
  die "no usable CUDA toolkit at '$cuda_root' ($cuda_from): missing ${cuda_missing[*]}. Install NVIDIA's CUDA toolkit (12 or 13; https://developer.nvidia.com/cuda-downloads) and set CUDA_PATH to its root if it is not /usr/local/cuda. No GPU is needed to build."
fi

if ((${#missing_pkgs[@]})) || [[ "${ENCORE_BOOTSTRAP_QUIET:-0}" != 1 ]]; then
  say "ok: bazel, spdlog, fmt, GoogleTest, GoogleMock, python3 present; CUDA toolkit at $cuda_root"
fi
