#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes a fresh Debian 12 machine ready to build and test encore, and does
# nothing on a machine that already is. Safe to run again and again; needs no
# root when everything is present.
#
# From Debian (installed with apt-get when missing):
#   bazel-bootstrap  Bazel 4.2.3, the build tool (builds offline, no downloads)
#   libspdlog-dev    spdlog headers (/usr/include/spdlog): encore's logger
#   libfmt-dev       fmt headers (/usr/include/fmt): spdlog's formatter
#   libgtest-dev     GoogleTest (/usr/lib/<multiarch>/libgtest.a): unit tests
#   libgmock-dev     GoogleMock (/usr/lib/<multiarch>/libgmock.a): unit tests
#   python3          summarizes test results (tools/test_summary.py)
# With --cmake, also what the CMake build needs:
#   cmake            CMake 3.25 (find_package(CUDAToolkit), spdlog's and
#                    GoogleTest's CMake packages come with the -dev packages)
# With --python, also what the Python package's build and tests need
# (tools/python_tests.sh; nanobind, scikit-build-core and pytest come from
# PyPI into a virtual environment):
#   cmake, python3-venv (python3 -m venv with pip), python3-dev (Python.h)
# <multiarch> is this machine's Debian triplet (x86_64-linux-gnu,
# aarch64-linux-gnu, ...). Not from apt: the CUDA toolkit (nvcc, cuda_runtime.h,
# cudart), found at $CUDA_PATH or /usr/local/cuda. This script checks for it and
# stops if absent.
#
# ENCORE_BOOTSTRAP_QUIET=1: print nothing when everything is present.
# ENCORE_SKIP_BOOTSTRAP=1: check and install nothing (a machine set up some
# other way; the build then says what is missing).
set -euo pipefail

say() { echo "bootstrap: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

if [[ "${ENCORE_SKIP_BOOTSTRAP:-0}" == 1 ]]; then
  [[ "${ENCORE_BOOTSTRAP_QUIET:-0}" == 1 ]] || say "skipped (ENCORE_SKIP_BOOTSTRAP=1)"
  exit 0
fi

with_cmake=0
with_python=0
for arg in "$@"; do
  case "$arg" in
    --cmake) with_cmake=1 ;;
    --python) with_cmake=1 with_python=1 ;;
    *) die "unknown argument '$arg' (tools/bootstrap.sh [--cmake] [--python])" ;;
  esac
done

# Debian's multiarch library directory, e.g. /usr/lib/x86_64-linux-gnu.
triplet="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)"
lib_dirs=()
[[ -n "$triplet" ]] && lib_dirs+=("/usr/lib/$triplet")
lib_dirs+=(/usr/lib64 /usr/lib /usr/local/lib)

# package | what must exist afterwards (a command, an absolute path, or lib:NAME
# for a file in one of the library directories) | why
REQUIREMENTS=(
  "bazel-bootstrap|bazel|Bazel 4.2.3, the build tool"
  "libspdlog-dev|/usr/include/spdlog/spdlog.h|spdlog headers, encore's logger"
  "libfmt-dev|/usr/include/fmt/format.h|fmt headers, used by spdlog"
  "libgtest-dev|lib:libgtest.a|GoogleTest static library, for the unit tests"
  "libgmock-dev|lib:libgmock.a|GoogleMock static library, for the unit tests"
  "python3|python3|Python 3, summarizes test results"
)
if ((with_cmake)); then
  REQUIREMENTS+=("cmake|cmake|CMake, for the CMake build (CMakeLists.txt)")
fi
if ((with_python)); then
  REQUIREMENTS+=("python3-venv|py:import venv, ensurepip|python3 -m venv, for the Python package's tests")
  REQUIREMENTS+=("python3-dev|py:import sysconfig, os; assert os.path.exists(sysconfig.get_paths()['include'] + '/Python.h')|Python's headers, for the Python module")
fi

present() {
  local d
  case "$1" in
    /*) [[ -e "$1" ]] ;;
    py:*) python3 -c "${1#py:}" >/dev/null 2>&1 ;;
    lib:*)
      for d in "${lib_dirs[@]}"; do [[ -e "$d/${1#lib:}" ]] && return 0; done
      return 1 ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing_pkgs=()
for req in "${REQUIREMENTS[@]}"; do
  IFS='|' read -r pkg want why <<<"$req"
  if ! present "$want"; then
    missing_pkgs+=("$pkg")
    [[ "$want" == lib:* ]] && want="${want#lib:} (in ${lib_dirs[*]})"
    [[ "$want" == py:* ]] && want="python3 able to run: ${want#py:}"
    say "missing: $want -> will install Debian package '$pkg' ($why)"
  fi
done

if ((${#missing_pkgs[@]})); then
  command -v apt-get >/dev/null 2>&1 ||
    die "apt-get is not available, so ${missing_pkgs[*]} cannot be installed here. encore's build expects Debian 12 (bookworm); install those packages (or their equivalents) by hand and run this again, or set ENCORE_SKIP_BOOTSTRAP=1."
  SUDO=()
  if [[ "$(id -u)" -ne 0 ]]; then
    # sudo -n: fail at once rather than wait for a password nobody will type.
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null ||
      die "not root and cannot sudo without a password, so these Debian packages are not installed: ${missing_pkgs[*]}. As root run: apt-get install -y ${missing_pkgs[*]} (or set ENCORE_SKIP_BOOTSTRAP=1 on a machine set up another way)"
    SUDO=(sudo -n)
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
      die "apt-get install ${missing_pkgs[*]} failed; install those packages by hand"
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
nvcc_path="${ENCORE_NVCC:-$cuda_root/bin/nvcc}"
[[ -e "$nvcc_path" ]] || cuda_missing+=("$nvcc_path")
[[ -e "$cuda_root/include/cuda_runtime.h" ]] || cuda_missing+=("$cuda_root/include/cuda_runtime.h")
# A static or a shared runtime (lib64/ or lib/; //tools:cudart picks one).
compgen -G "$cuda_root/lib64/libcudart*" >/dev/null || compgen -G "$cuda_root/lib/libcudart*" >/dev/null ||
  cuda_missing+=("$cuda_root/lib64/libcudart_static.a or libcudart.so")
if ((${#cuda_missing[@]})); then
  die "no usable CUDA toolkit at '$cuda_root' ($cuda_from): missing ${cuda_missing[*]}. Install NVIDIA's CUDA toolkit (12.4 or newer; https://developer.nvidia.com/cuda-downloads) and set CUDA_PATH to its root if it is not /usr/local/cuda. No GPU is needed to build."
fi

if ((${#missing_pkgs[@]})) || [[ "${ENCORE_BOOTSTRAP_QUIET:-0}" != 1 ]]; then
  say "ok: bazel, spdlog, fmt, GoogleTest, GoogleMock, python3$( ((with_cmake)) && echo ", cmake") present; CUDA toolkit at $cuda_root"
fi
