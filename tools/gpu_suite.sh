#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU tests, examples and benchmarks for a GPU machine that has no Bazel.
#
#   tools/gpu_suite.sh build [--no-bench] [BAZEL_BUILD_FLAGS...]
#       Here, with Bazel: builds //... and stages into gpu_bin/ (git-ignored;
#       $GPU_BIN names another folder) every cc_test tagged `gpu`
#       (gpu_bin/tests/), every cc_binary under //examples and //bench
#       (gpu_bin/examples/, gpu_bin/bench/), bench/*.py, tools/test_summary.py
#       and this script (gpu_bin/tools/). Binaries are stripped; they are
#       static except for libc/libstdc++ (and libcublas, libcublasLt, libnccl
#       for the tests that use them), and reach the driver through cudart at
#       run time, so the GPU machine needs only a driver and python3.
#       Targets whose library the toolkit lacks (@cuda//:nccl, @cuda//:cublas
#       incompatible) are left out, saying so.
#       --no-bench leaves //bench out. Other arguments go to `bazel build`,
#       e.g. --//tools:cuda_archs=compute_80 (PTX only: the driver's JIT).
#       $ENCORE_BAZEL replaces the `bazel` command (tools/cuda12_check.sh
#       gives it its own output base).
#
#   tools/gpu_suite.sh run [--memcheck|--racecheck] [--filter REGEX] [--timeout SECONDS]
#       On the GPU machine: runs every test binary (GoogleTest XML to the
#       results dir), then every example binary (one test each: exit 0 passes,
#       77 skips). --memcheck / --racecheck wrap each in compute-sanitizer's
#       memcheck / racecheck tool.
#       --filter keeps binaries whose name matches REGEX (grep -E). The last
#       line is `N passed, N failed, N skipped`; exits non-zero on any failure.
#       A binary needing a shared library the loader cannot find (libcublas.so.13
#       on a machine that has it only in PyTorch's pip wheels) runs with the
#       lib folders of python3's `nvidia` packages that hold it added to
#       LD_LIBRARY_PATH; if they do not hold it either, the binary is not run
#       and counts as failed, with the missing library named.
#
#   tools/gpu_suite.sh bench [--filter REGEX] [--timeout SECONDS]
#       On the GPU machine: runs every bench binary and bench/*_bench.py
#       script (other bench/*.py are modules those scripts import).
#
#   tools/gpu_suite.sh python [--wheel WHEEL] [PYTEST_ARGS...]
#       On the GPU machine, from the repository (not the staged copy): runs
#       python/tests, GPU tests included, with the package installed from a
#       wheel into a fresh virtual environment made from the python3 that has
#       PyTorch (--system-site-packages, so PyTorch and pytest are seen;
#       $ENCORE_PYTHON names another interpreter); tools/python_tests.sh. The
#       last line is `N passed, N failed, N skipped`.
#       --wheel WHEEL (or $ENCORE_WHEEL): a wheel built elsewhere for that
#       python3 (cp312 for Python 3.12), from this same commit: nothing is
#       built, so no CUDA toolkit, spdlog, fmt, nanobind or network is needed.
#       Built on a machine with a toolkit and a Python 3.12 (docs/python.md,
#       "A wheel"):
#         CUDAARCHS=90-real tools/build_wheel.sh --python python3.12   # -> build/wheelhouse/
#       and carried beside the repository (build/wheelhouse is git-ignored).
#       Without a wheel it builds one there (pip wheel --no-build-isolation:
#       needs the toolkit, scikit-build-core and nanobind in that python3, and
#       spdlog's and fmt's headers: where Debian's are absent,
#       $ENCORE_LOG_HEADERS names a folder of them). Then the wheel is
#       installed into that python3 too, for bench/python_*_bench.py.
#
# Results (XML, one log per binary) go to $OUT if set, else gpu_bin/results.
# Works from the repository (tools/gpu_suite.sh, finds ./gpu_bin) or from the
# staged copy alone (gpu_bin/tools/gpu_suite.sh).
set -uo pipefail

say() { echo "gpu_suite: $*" >&2; }
die() { say "ERROR: $*"; exit 2; }
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -n "${GPU_BIN:-}" ]]; then
  gpu_bin="$GPU_BIN"
elif [[ -f "$script_dir/../MANIFEST" ]]; then
  gpu_bin="$(cd "$script_dir/.." && pwd)"  # running the staged copy
else
  gpu_bin="$(cd "$script_dir/.." && pwd)/gpu_bin"
fi

# ---------------------------------------------------------------- build ----
do_build() {
  local repo no_bench=0 bazel_args=()
  repo="$(cd "$script_dir/.." && pwd)"
  [[ -f "$repo/WORKSPACE" ]] || die "'build' runs from the repository (no WORKSPACE in $repo)"
  cd "$repo" || exit 2
  while (($#)); do
    case "$1" in
      --no-bench) no_bench=1 ;;
      *) bazel_args+=("$1") ;;
    esac
    shift
  done
  gpu_bin="${GPU_BIN:-$repo/gpu_bin}"
  mkdir -p "$gpu_bin" && gpu_bin="$(cd "$gpu_bin" && pwd)" || die "cannot create $gpu_bin"
  if [[ ! -f "$gpu_bin/MANIFEST" && -n "$(ls -A "$gpu_bin")" ]]; then
    die "$gpu_bin is not empty and holds no MANIFEST: not a staged folder, so it is left alone"
  fi
  ENCORE_BOOTSTRAP_QUIET=1 tools/bootstrap.sh || exit 1
  local bazel=(${ENCORE_BAZEL:-bazel})
  local patterns=(//...)
  ((no_bench)) && patterns+=(-//bench/...)

  say "${bazel[*]} build ${bazel_args[*]} -- ${patterns[*]}"
  "${bazel[@]}" build "${bazel_args[@]}" -- "${patterns[@]}" || die "bazel build failed"

  local bin_dir output_base
  bin_dir="$("${bazel[@]}" info bazel-bin 2>/dev/null)" || die "bazel info bazel-bin failed"
  output_base="$("${bazel[@]}" info output_base 2>/dev/null)" || die "bazel info output_base failed"
  # Where NCCL is missing, @cuda//:nccl is incompatible and the build skipped
  # everything that needs it: leave those out, saying so once.
  local skip='set()'
  if grep -q '^NCCL_FOUND = False' "$output_base/external/cuda/defs.bzl" 2>/dev/null; then
    skip="$skip + rdeps(//..., @cuda//:nccl)"
    tools/nccl_note.sh gpu_suite >&2
  fi
  # Likewise cuBLAS, which the toolkit's wheels for CUDA 12 lack.
  if grep -q '^CUBLAS_FOUND = False' "$output_base/external/cuda/defs.bzl" 2>/dev/null; then
    skip="$skip + rdeps(//..., @cuda//:cublas)"
    say "cuBLAS not found in the CUDA toolkit: skipped $("${bazel[@]}" query --noshow_progress \
      'rdeps(//..., @cuda//:cublas)' 2>/dev/null | grep -v '^@' | tr '\n' ' ')"
  fi
  # The PyTorch adapter's binaries link PyTorch's shared libraries, which a
  # driver-only machine lacks: tools/torch_suite.sh builds and runs them.
  skip="$skip + attr(tags, '\btorch\b', tests(//...))"
  local cuda_version
  cuda_version="$(sed -n 's/^CUDA_VERSION = "\(.*\)"/\1/p' "$output_base/external/cuda/defs.bzl" 2>/dev/null)"

  local tests binaries
  tests="$("${bazel[@]}" query --noshow_progress "attr(tags, '\bgpu\b', tests(//...)) except ($skip)" 2>/dev/null)" ||
    die "bazel query for gpu tests failed"
  # Everything under //examples and //bench, queried through //... so that an
  # empty or missing folder is not an error.
  binaries="$("${bazel[@]}" query --noshow_progress "kind('cc_binary rule', //...) except ($skip)" 2>/dev/null)" ||
    die "bazel query for cc_binary targets failed"

  rm -rf "$gpu_bin"
  mkdir -p "$gpu_bin"/{tests,examples,bench,tools}

  stage() {  # label dest_dir
    local label="$1" dest="$2" pkg name src out
    pkg="${label#//}"; pkg="${pkg%%:*}"; name="${label##*:}"
    src="$bin_dir/$pkg/$name"
    [[ -f "$src" ]] || die "$label: no binary at $src"
    out="$dest/$name"
    if [[ -e "$out" ]]; then out="$dest/${pkg//\//_}_$name"; fi  # same name, two packages
    cp "$src" "$out" && chmod u+w,a+rx "$out" && strip "$out" || die "could not stage $label"
    printf '%s\t%s\n' "${out#$gpu_bin/}" "$label" >>"$gpu_bin/MANIFEST"
  }

  {
    echo "# encore gpu_bin: staged by tools/gpu_suite.sh build"
    echo "# commit ${ENCORE_SOURCE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')}"
    echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    echo "# CUDA ${cuda_version:-unknown} (@cuda), bazel build ${bazel_args[*]}"
  } >"$gpu_bin/MANIFEST"
  local label n_tests=0 n_examples=0 n_bench=0
  for label in $tests; do stage "$label" "$gpu_bin/tests"; n_tests=$((n_tests + 1)); done
  for label in $binaries; do
    case "$label" in
      //examples/* | //examples:*) stage "$label" "$gpu_bin/examples"; n_examples=$((n_examples + 1)) ;;
      //bench/* | //bench:*) ((no_bench)) || { stage "$label" "$gpu_bin/bench"; n_bench=$((n_bench + 1)); } ;;
    esac
  done
  local py
  for py in bench/*.py; do
    [[ -f "$py" && "$no_bench" -eq 0 ]] || continue
    cp "$py" "$gpu_bin/bench/" && printf '%s\t%s\n' "bench/${py##*/}" "$py" >>"$gpu_bin/MANIFEST"
    n_bench=$((n_bench + 1))
  done
  cp tools/test_summary.py tools/gpu_suite.sh "$gpu_bin/tools/"
  chmod +x "$gpu_bin/tools/"*

  say "staged $n_tests gpu test(s), $n_examples example(s), $n_bench bench file(s) into $gpu_bin:"
  sed -n 's/^\([^#][^\t]*\)\t.*/  \1/p' "$gpu_bin/MANIFEST" >&2
  local size
  size="$(du -sh "$gpu_bin" | cut -f1)"
  say "gpu_bin size: $size ($(du -sb "$gpu_bin" | cut -f1) bytes; it must stay under 64 MiB to travel)"
  say "on the GPU machine: tools/gpu_suite.sh run [--memcheck]   (or gpu_bin/tools/gpu_suite.sh run)"
}

# ------------------------------------------------------------ run/bench ----
sanitizer_tool="" filter="" timeout_s=300
parse_run_args() {
  while (($#)); do
    case "$1" in
      --memcheck) sanitizer_tool=memcheck ;;
      --racecheck) sanitizer_tool=racecheck ;;
      --filter) (($# >= 2)) || die "--filter needs a REGEX"; filter="$2"; shift ;;
      --filter=*) filter="${1#--filter=}" ;;
      --timeout) (($# >= 2)) || die "--timeout needs SECONDS"; timeout_s="$2"; shift ;;
      --timeout=*) timeout_s="${1#--timeout=}" ;;
      -h | --help) usage ;;
      *) die "unknown argument '$1' (see tools/gpu_suite.sh --help)" ;;
    esac
    shift
  done
  [[ "$timeout_s" =~ ^[0-9]+$ ]] || die "--timeout wants whole seconds, got '$timeout_s'"
}

setup_results() {
  [[ -d "$gpu_bin" ]] || die "no staged folder at $gpu_bin: run 'tools/gpu_suite.sh build' on the build machine first"
  if [[ -n "${OUT:-}" ]]; then
    results="$OUT"
  else
    results="$gpu_bin/results"
    rm -rf "$results"
  fi
  mkdir -p "$results" || die "cannot create results dir $results"
  summary_py="$gpu_bin/tools/test_summary.py"
  [[ -f "$summary_py" ]] || summary_py="$script_dir/test_summary.py"
  [[ -f "$summary_py" ]] || die "tools/test_summary.py not found"
  command -v python3 >/dev/null 2>&1 || die "python3 is needed to summarize results"
  wrap=()
  if command -v timeout >/dev/null 2>&1 && ((timeout_s > 0)); then
    wrap=(timeout -k 10 "$timeout_s")
  fi
}

# Binaries of one staged folder, filtered by --filter.
list_binaries() {
  local dir="$1" f
  for f in "$dir"/*; do
    [[ -f "$f" && -x "$f" && "$f" != *.py ]] || continue
    [[ -z "$filter" ]] || grep -Eq -- "$filter" <<<"${f##*/}" || continue
    echo "$f"
  done
}

find_sanitizer() {
  local c
  for c in "$(command -v compute-sanitizer 2>/dev/null)" /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
    [[ -n "$c" && -x "$c" ]] && { echo "$c"; return 0; }
  done
  return 1
}

# Libraries `ldd BINARY` cannot find, one name a line (none without ldd).
missing_libs() {
  command -v ldd >/dev/null 2>&1 || return 0
  ldd "$1" 2>/dev/null | sed -n 's/^[[:space:]]*\([^[:space:]]*\) => not found.*/\1/p' | sort -u
}

# The folders under python3's `nvidia` packages (PyTorch's CUDA wheels:
# nvidia/cu13/lib, nvidia/cublas/lib, ...) holding any of the named files.
wheel_lib_dirs() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - "$@" <<'PY' 2>/dev/null
import os, sys
names = set(sys.argv[1:])
try:
    import nvidia  # a namespace package: no CUDA is loaded
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
seen = []
for root in roots:
    for d, subdirs, files in os.walk(root):
        if d[len(root):].count(os.sep) >= 3:
            subdirs[:] = []
        if names & set(files) and d not in seen:
            seen.append(d)
print("\n".join(seen))
PY
}

# Sets run_env (an `env LD_LIBRARY_PATH=...` prefix, or nothing) so that BINARY
# finds its shared libraries; returns 1, with lib_error saying which are
# missing, when they are nowhere to be found.
lib_env() {
  local bin="$1" missing dirs still
  run_env=() lib_error=""
  missing="$(missing_libs "$bin")"
  [[ -n "$missing" ]] || return 0
  dirs="$(wheel_lib_dirs $missing | paste -sd: -)"
  if [[ -n "$dirs" ]]; then
    local path="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    still="$(LD_LIBRARY_PATH="$path" missing_libs "$bin")"
    if [[ -z "$still" ]]; then
      run_env=(env "LD_LIBRARY_PATH=$path")
      say "${bin##*/}: found $(tr '\n' ' ' <<<"$missing")in $dirs (added to LD_LIBRARY_PATH)"
      return 0
    fi
    missing="$still"
  fi
  lib_error="cannot load $(tr '\n' ' ' <<<"$missing")(not in the loader's path, LD_LIBRARY_PATH, nor python3's nvidia packages${dirs:+ ($dirs)}): install them (e.g. PyTorch's CUDA wheels) or set LD_LIBRARY_PATH"
  return 1
}

describe_rc() {
  case "$1" in
    0) echo "ok" ;;
    77) echo "skipped (exit 77)" ;;
    99) echo "exit 99 (compute-sanitizer found errors)" ;;
    124 | 137) echo "exit $1 (timed out after ${timeout_s}s)" ;;
    *) if (($1 > 128)); then echo "exit $1 (signal $(($1 - 128)))"; else echo "exit $1"; fi ;;
  esac
}

do_run() {
  parse_run_args "$@"
  setup_results
  local sanitizer=()
  if [[ -n "$sanitizer_tool" ]]; then
    local cs
    cs="$(find_sanitizer)" || die "--$sanitizer_tool: compute-sanitizer not found on PATH or in /usr/local/cuda/bin"
    # API errors are left out: the failure-path tests make CUDA calls that a
    # capture refuses on purpose; the tools are here for memory errors and races.
    # The trap-mode tests end a child process's CUDA context with a device
    # trap on purpose, which the tool reports as one error of the binary
    # (check_gpu_test, device_check_kernel_test). --target-processes
    # application-only hides it but fails CheckGpuTest's trap test, so
    # children stay tracked and those tests skip, saying why, when
    # ENCORE_SANITIZER is set (tests/gpu_test_util.h).
    export ENCORE_SANITIZER="$sanitizer_tool"
    sanitizer=("$cs" --tool "$sanitizer_tool" --error-exitcode 99)
    [[ "$sanitizer_tool" == memcheck ]] && sanitizer+=(--report-api-errors no)
    say "$sanitizer_tool: $cs"
  fi
  say "results in $results"

  local args=() bin name rc n=0 tests=() examples=()
  mapfile -t tests < <(list_binaries "$gpu_bin/tests")
  mapfile -t examples < <(list_binaries "$gpu_bin/examples")
  for bin in "${tests[@]}"; do
    name="${bin##*/}"
    say "test $name ..."
    if lib_env "$bin"; then
      "${wrap[@]}" "${run_env[@]}" "${sanitizer[@]}" "$bin" --gtest_output="xml:$results/$name.xml" \
        >"$results/$name.log" 2>&1
      rc=$?
      say "test $name: $(describe_rc "$rc")"
    else
      echo "gpu_suite: not run: $lib_error" >"$results/$name.log"
      rc=127  # the loader's status; no XML, so it counts as failed
      say "test $name: FAILED: $lib_error"
    fi
    args+=(--run "$results/$name.xml=$rc")
    n=$((n + 1))
  done
  for bin in "${examples[@]}"; do
    name="${bin##*/}"
    say "example $name ..."
    if lib_env "$bin"; then
      # Under a sanitizer the examples shorten themselves (ENCORE_SANITIZER,
      # examples/example_util.h's Rounds): no arguments here override that.
      (cd "$results" && "${wrap[@]}" "${run_env[@]}" "${sanitizer[@]}" "$bin") \
        >"$results/example_$name.log" 2>&1
      rc=$?
    else
      echo "gpu_suite: not run: $lib_error" >"$results/example_$name.log"
      rc=127
    fi
    say "example $name: $(describe_rc "$rc")"
    ((rc == 0 || rc == 77)) || tail -n 20 "$results/example_$name.log" | sed 's/^/    /' >&2
    args+=(--exit "example:$name=$rc")
    n=$((n + 1))
  done
  ((n > 0)) || say "warning: nothing to run in $gpu_bin${filter:+ matching '$filter'}"
  [[ -z "$sanitizer_tool" ]] || sanitizer_totals
  # test_summary.py's last line is the summary; its exit status is ours.
  python3 "$summary_py" "${args[@]}"
}

# compute-sanitizer's own count for every binary's log ("ERROR SUMMARY: N
# errors", its last line there), one line for the run: a binary whose log
# holds no summary is named, since the tool did not finish there.
sanitizer_totals() {
  local log count total=0 with_errors=() without=() logs=0
  for log in "$results"/*.log; do
    [[ -f "$log" ]] || continue
    logs=$((logs + 1))
    # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: N
    # hazards displayed (N errors, N warnings)".
    count="$(grep -Eo '(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: .*\([0-9]+ error)' "$log" | tail -n 1 |
      grep -Eo '[0-9]+ error' | grep -Eo '[0-9]+')"
    if [[ -z "$count" ]]; then
      without+=("$(basename "$log" .log)")
    elif ((count > 0)); then
      total=$((total + count))
      with_errors+=("$(basename "$log" .log)=$count")
    fi
  done
  say "$sanitizer_tool: $total errors reported in $logs binaries${with_errors[*]:+ (${with_errors[*]})}"
  ((${#without[@]} == 0)) || say "$sanitizer_tool: no ERROR SUMMARY (the tool did not finish) in: ${without[*]}"
}

do_bench() {
  parse_run_args "$@"
  [[ -z "$sanitizer_tool" ]] || die "bench does not take --$sanitizer_tool"
  setup_results
  say "results in $results"
  local f name rc failed=0 ran=0
  local files=()
  mapfile -t files < <(list_binaries "$gpu_bin/bench")
  for f in "$gpu_bin"/bench/*_bench.py; do
    [[ -f "$f" ]] || continue
    # The Python package's benchmarks run from the repository, after
    # `tools/gpu_suite.sh python` installed the package (bench/README.md).
    [[ "${f##*/}" != python_* ]] || continue
    [[ -z "$filter" ]] || grep -Eq -- "$filter" <<<"${f##*/}" || continue
    files+=("$f")
  done
  for f in "${files[@]}"; do
    name="${f##*/}"
    say "bench $name ..."
    local cmd=("$f")
    [[ "$f" != *.py ]] || cmd=(python3 "$f")
    run_env=()
    if [[ "$f" != *.py ]] && ! lib_env "$f"; then
      say "bench $name: FAILED: $lib_error"
      failed=$((failed + 1))
      continue
    fi
    cmd=("${run_env[@]}" "${cmd[@]}")
    (cd "$gpu_bin/bench" && RESULTS="$results" "${wrap[@]}" "${cmd[@]}") >"$results/bench_$name.log" 2>&1
    rc=$?
    ran=$((ran + 1))
    say "bench $name: $(describe_rc "$rc") (output: $results/bench_$name.log)"
    if ((rc != 0)); then
      failed=$((failed + 1))
      tail -n 20 "$results/bench_$name.log" | sed 's/^/    /' >&2
    fi
  done
  echo "bench: $ran run, $failed failed"
  ((failed == 0))
}

do_python() {
  local repo results wheel="${ENCORE_WHEEL:-}"
  repo="$(cd "$script_dir/.." && pwd)"
  [[ -f "$repo/pyproject.toml" ]] || die "'python' runs from the repository (no pyproject.toml in $repo)"
  case "${1:-}" in
    --wheel) (($# >= 2)) || die "--wheel needs a wheel file"; wheel="$2"; shift 2 ;;
    --wheel=*) wheel="${1#--wheel=}"; shift ;;
  esac
  if [[ -n "$wheel" ]]; then
    [[ -f "$wheel" ]] || die "no wheel at '$wheel'"
    wheel="$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")"
    say "python: testing $wheel (nothing is built)"
  fi
  results="${OUT:-$gpu_bin/results}"
  mkdir -p "$results"
  local py="${ENCORE_PYTHON:-python3}"
  ENCORE_SKIP_BOOTSTRAP=1 ENCORE_PYTHON="$py" ENCORE_WHEEL="$wheel" \
    "$repo/tools/python_tests.sh" "$results/python.xml" "$@" 2>&1 | tee "$results/python.log"
  # The tests ran in an environment of their own; the benchmarks
  # (bench/python_*_bench.py) import encore from python3 itself.
  if [[ -z "$wheel" ]]; then
    local tag
    tag="$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
    wheel="$(ls -t "$repo"/build/wheelhouse/encore-*-"$tag"-*.whl 2>/dev/null | head -n 1)"
  fi
  if [[ -f "$wheel" ]] &&
     "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps --force-reinstall "$wheel" >&2; then
    say "python: installed ${wheel##*/} into $py for the benchmarks"
  else
    say "python: warning: encore not installed into $py (the benchmarks need it)"
  fi
  python3 "$repo/tools/test_summary.py" "$results/python.xml"
}

mode="${1:-}"
(($#)) && shift
case "$mode" in
  build) do_build "$@" ;;
  python) do_python "$@" ;;
  run) do_run "$@" ;;
  bench) do_bench "$@" ;;
  -h | --help | help) usage ;;
  *) usage ;;
esac
