#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Python package (pip install . into a virtual environment) and
# runs its tests with pytest, writing JUnit XML for tools/test_summary.py.
#
#   tools/python_tests.sh XML [PYTEST_ARGS...]
#
# The environment is build/venv (reused, so a second run rebuilds only what
# changed: scikit-build-core keeps its CMake build in build/<wheel tag>).
# Without a GPU or PyTorch the GPU tests skip; `import encore` needs
# neither. A build that fails writes an XML with one failed testcase, so
# the summary counts it. CUDAARCHS picks the GPU code (here default
# 90-real: one architecture is enough to test, and compiles fastest);
# ENCORE_PYTHON=/path/to/python uses that interpreter, e.g. one with
# PyTorch, instead of a new environment.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
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

ENCORE_BOOTSTRAP_QUIET=1 tools/bootstrap.sh --python || fail_xml "tools/bootstrap.sh --python failed"
if [[ -n "${ENCORE_PYTHON:-}" ]]; then
  py="$ENCORE_PYTHON"
else
  if [[ ! -x build/venv/bin/python ]]; then
    python3 -m venv build/venv || fail_xml "python3 -m venv build/venv failed"
  fi
  py="$PWD/build/venv/bin/python"
  "$py" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.0" pytest ||
    fail_xml "pip could not install scikit-build-core, nanobind and pytest"
fi
export CUDAARCHS="${CUDAARCHS:-90-real}"
echo "python_tests: pip install . ($("$py" --version), CUDAARCHS=$CUDAARCHS)" >&2
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation . ||
  fail_xml "pip install . failed (the build's errors are above)"
# From the tests' folder, so `import encore` is the installed package, not
# the source folder python/encore (which has no compiled module).
cd python/tests && "$py" -m pytest -q -p no:cacheprovider --junitxml="$xml" "$@" .
rc=$?
# pytest's 5: no tests collected, which the summary then shows as 0.
[[ $rc -eq 5 ]] && rc=0
exit $rc
