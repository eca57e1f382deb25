#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch adapter (interop/torch/): its tests, example, AOTInductor load
# diagnosis and benchmarks, on a GPU machine with PyTorch (python3's torch).
#
#   tools/torch_suite.sh stage DIR [--tar FILE] [--build BUILD] [--jobs N] [--arch A]
#       Here (no GPU needed): configures and builds encore, encore::torch,
#       the adapter's tests, bench/torch_aoti_bench, the load probe and
#       examples/torch_mlp with CMake + ninja into BUILD (default
#       torch_build/), against TORCH_DIR (else python3's torch); the
#       binaries carry no RUNPATH (-DCMAKE_SKIP_BUILD_RPATH=ON), so they
#       find PyTorch only through the LD_LIBRARY_PATH this script sets. Runs
#       the CPU tests, then stages into DIR (emptied first): bin/ (stripped
#       binaries), bench/ (the Python scripts the run uses), tools/ (this
#       script, test_summary.py, torch_aoti_load.py) and MANIFEST. --tar FILE: also packs DIR
#       into FILE (.tar.xz). --arch: CMAKE_CUDA_ARCHITECTURES (default
#       90-real). --jobs: ninja's -j (default 2).
#
#   tools/torch_suite.sh prebuilt DIR [--no-export] [--package PKG] [--quick] [--no-bench]
#       On the GPU machine, with DIR a staged folder (`stage`; no build, no
#       cmake or nvcc needed): the run below with DIR/bin's binaries and
#       DIR's scripts, packages cached in DIR/aoti/, within a time budget
#       (TORCH_SUITE_BUDGET seconds, default 480: steps that would end
#       after it are not started and count as skipped).
#       --no-export: no AOTInductor export (about 75 s); a package cached in
#       DIR/aoti/ or named by --package is still used, else the AOTInductor
#       tests skip and the benchmark runs the libtorch MLP.
#
#   tools/torch_suite.sh [run] [--build DIR] [--quick] [--no-bench]
#       On the GPU machine, building there: configures and builds the same
#       targets into DIR (default torch_build/, git-ignored), then the run.
#
#   tools/torch_suite.sh deps DIR
#       Here, on Debian: copies spdlog's and fmt's headers and CMake files and
#       GoogleTest's source (built there with the machine's compiler) into
#       DIR, for a GPU machine that lacks them when it builds (`run`): the
#       suite uses $ENCORE_DEPS, else ./torch_deps, when it exists.
#
# The run: compiles bench/torch_aoti_model.py's decoder into an AOTInductor
# package with bench/torch_aoti_export.py in the background while the tests
# that need no package run (the CPU tests, the Scope GPU tests, the example
# examples/torch_mlp, and the negative control: routing off,
# ENCORE_TORCH_ROUTE_ALLOCATOR=0, must make the routing test fail); loads the
# package in child processes from C++ (tools/torch_aoti_load_probe.cc) and
# from Python (tools/torch_aoti_load.py), printing what crashed and where
# (loading a package has crashed the process on some hosts), under gdb when there is one, and when a load fails tries a
# variant whose weights are not embedded in the .so; then the AOTInductor
# GPU tests on the first package that loads from C++ (and their negative
# control), then the benchmarks bench/torch_aoti_bench (C++) and
# bench/torch_aoti_cudagraph.py (torch.cuda.CUDAGraph from Python) and a
# table. Binaries run with LD_LIBRARY_PATH = python3's torch/lib and the lib
# folders of its nvidia pip packages (libcudart.so.13 among them), checked
# with ldd first.
# Results: logs, GoogleTest XML, JSON and the table in DIR/results (BUILD/
# results for `run`); with $OUT set, $OUT gets torch_results.tar.gz (all of
# them), torch_suite.log (this console), torch_bench_table.md and
# summary.txt: four files. The last line is `N passed, N failed, N skipped`;
# exits non-zero if anything failed.
#
# Environment: TORCH_DIR (else python3's torch), PYTHON (default python3),
# ENCORE_DEPS, OUT, TORCH_SUITE_BUDGET.
set -uo pipefail

say() { echo "torch_suite: $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-python3}"

# The targets a stage or a build makes, and where each goes.
torch_tests=(interop_torch_tensor_ref_test interop_torch_aoti_method_test
             interop_torch_scope_gpu_test interop_torch_aoti_gpu_test)
torch_bins=("${torch_tests[@]}" bench_torch_aoti_bench tools_torch_aoti_load_probe example_torch_mlp)
torch_py=(bench/bench_common.py bench/torch_aoti_model.py bench/torch_aoti_export.py
          bench/torch_aoti_cudagraph.py bench/torch_aoti_table.py)

# ----------------------------------------------------------------- deps ----
do_deps() {
  local dir="${1:-}" arch
  [[ -n "$dir" ]] || die "usage: tools/torch_suite.sh deps DIR"
  arch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  mkdir -p "$dir/include" "$dir/lib/$arch/cmake" || die "cannot create $dir"
  for h in spdlog fmt; do
    [[ -d "/usr/include/$h" ]] || die "/usr/include/$h missing (tools/bootstrap.sh --cmake installs it)"
    cp -a "/usr/include/$h" "$dir/include/"
  done
  for c in spdlog fmt; do cp -a "/usr/lib/$arch/cmake/$c" "$dir/lib/$arch/cmake/"; done
  # The CMake files check that the libraries they name exist (encore uses
  # the header-only targets).
  cp -a /usr/lib/"$arch"/libspdlog.so* /usr/lib/"$arch"/libfmt.so* "$dir/lib/$arch/"
  # GoogleTest as source, built there by the machine's own compiler.
  [[ -d /usr/src/googletest ]] || die "/usr/src/googletest missing (apt-get install googletest)"
  cp -a /usr/src/googletest "$dir/googletest"
  echo "$arch" >"$dir/ARCH"
  say "staged spdlog, fmt and GoogleTest's source in $dir ($(du -sh "$dir" | cut -f1)); carry it to the GPU machine"
}

# ---------------------------------------------------------------- torch ----
torch_dir="" torch_version="" torch_cuda="" arch_list=""

# Sets torch_dir (TORCH_DIR, else $py's torch) and LD_LIBRARY_PATH: its lib/
# and the lib folders of the nvidia pip packages beside it.
find_torch_dir() {
  torch_dir="${TORCH_DIR:-$("$py" -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>/dev/null)}"
  [[ -n "$torch_dir" && -d "$torch_dir/lib" ]] || die "no PyTorch (TORCH_DIR or $py's torch): '$torch_dir'"
  torch_dir="$(cd "$torch_dir" && pwd)"
  local p="$torch_dir/lib" d
  for d in "$(dirname "$torch_dir")"/nvidia/*/lib; do [[ -d "$d" ]] && p+=":$d"; done
  export LD_LIBRARY_PATH="$p${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# On the GPU machine: the torch package, its CUDA and the GPU's sm_NN.
find_torch() {
  find_torch_dir
  local info
  info="$("$py" -c 'import torch; c = torch.cuda.get_device_capability(); print(torch.__version__, torch.version.cuda, "%d%d" % c, torch.cuda.get_device_name())' 2>&1)" ||
    die "$py cannot use torch with CUDA here: $info"
  read -r torch_version torch_cuda arch_list _ <<<"$info"
  say "PyTorch $torch_version (CUDA $torch_cuda) at $torch_dir; GPU: ${info#* * * }, sm_$arch_list"
}

# ---------------------------------------------------------------- build ----
# configure BUILD LOGDIR ARCHS EXTRA_CMAKE_ARGS...: cmake and ninja for the
# torch targets only.
configure_and_build() {
  local b="$1" logs="$2" archs="$3" jobs="$4"; shift 4
  local deps="${ENCORE_DEPS:-$repo/torch_deps}" args=("$@") arch
  [[ -f "$torch_dir/share/cmake/Torch/TorchConfig.cmake" ]] || die "$torch_dir has no CMake files"
  if [[ -d "$deps" ]]; then
    arch="$(cat "$deps/ARCH" 2>/dev/null || echo x86_64-linux-gnu)"
    args+=("-Dspdlog_DIR=$deps/lib/$arch/cmake/spdlog" "-Dfmt_DIR=$deps/lib/$arch/cmake/fmt"
           "-DENCORE_GTEST_SOURCE=$deps/googletest")
    say "spdlog, fmt and GoogleTest from $deps"
  fi
  step "cmake configure ($b)"
  cmake -S "$repo" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DENCORE_CUDART=shared \
        -DENCORE_BUILD_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES="$archs" -DTORCH_DIR="$torch_dir" "${args[@]}" \
        >"$logs/cmake_configure.log" 2>&1 || { tail -30 "$logs/cmake_configure.log"; die "cmake configure failed"; }
  grep -E "^-- encore" "$logs/cmake_configure.log" >&2
  grep -q "building encore::torch" "$logs/cmake_configure.log" || die "encore::torch was not configured (see above)"
  step "build (ninja -j$jobs, ${#torch_bins[@]} targets)"
  cmake --build "$b" -j "$jobs" --target "${torch_bins[@]}" >"$logs/cmake_build.log" 2>&1 ||
    { grep -E "error|Error" "$logs/cmake_build.log" | head -40; die "the build failed ($logs/cmake_build.log)"; }
}

# ---------------------------------------------------------------- stage ----
do_stage() {
  local dir="" tarball="" b="$repo/torch_build" jobs=2 archs=90-real
  while (($#)); do
    case "$1" in
      --tar) tarball="$2"; shift ;;
      --build) b="$2"; shift ;;
      --jobs) jobs="$2"; shift ;;
      --arch) archs="$2"; shift ;;
      -*) die "unknown argument '$1' (see the top of tools/torch_suite.sh)" ;;
      *) dir="$1" ;;
    esac
    shift
  done
  [[ -n "$dir" ]] || die "usage: tools/torch_suite.sh stage DIR [--tar FILE]"
  [[ -f "$repo/CMakeLists.txt" ]] || die "'stage' runs from the repository"
  if [[ -d "$dir" && -n "$(ls -A "$dir")" && ! -f "$dir/MANIFEST" ]]; then
    die "$dir is not empty and holds no MANIFEST: not a staged folder, so it is left alone"
  fi
  find_torch_dir
  mkdir -p "$b" && b="$(cd "$b" && pwd)" || die "cannot create $b"
  local logs="$b/stage_logs"
  mkdir -p "$logs"
  configure_and_build "$b" "$logs" "$archs" "$jobs" -DCMAKE_SKIP_BUILD_RPATH=ON
  local t rc=0
  for t in interop_torch_tensor_ref_test interop_torch_aoti_method_test; do
    step "CPU test $t"
    "$b/$t" >"$logs/$t.log" 2>&1 || rc=1
    grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/$t.log" | sed 's/^/      /' >&2
  done
  ((rc == 0)) || die "a CPU test failed (logs in $logs)"
  rm -rf "$dir" && mkdir -p "$dir"/{bin,bench,tools} && dir="$(cd "$dir" && pwd)" || die "cannot create $dir"
  for t in "${torch_bins[@]}"; do
    cp "$b/$t" "$dir/bin/"
    # The probe keeps its symbols: its backtraces name its frames.
    [[ "$t" == tools_torch_aoti_load_probe ]] || strip "$dir/bin/$t"
  done
  for t in "${torch_py[@]}"; do cp "$repo/$t" "$dir/bench/"; done
  cp "$repo/tools/torch_suite.sh" "$repo/tools/test_summary.py" "$repo/tools/torch_aoti_load.py" "$dir/tools/"
  {
    echo "# encore torch binaries: staged by tools/torch_suite.sh stage"
    echo "commit $(git -C "$repo" rev-parse HEAD 2>/dev/null)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "torch $(sed -n 's/^__version__ = .\(.*\).$/\1/p' "$torch_dir/version.py" 2>/dev/null) ($torch_dir)"
    echo "cuda_archs $archs"
    echo "compiler $(g++ --version | head -1); nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    (cd "$dir" && find bin bench tools -type f | sort | xargs sha256sum)
  } >"$dir/MANIFEST"
  say "staged into $dir ($(du -sh "$dir" | cut -f1)); needs at run time: $(needed_libs "$dir/bin")"
  if [[ -n "$tarball" ]]; then
    mkdir -p "$(dirname "$tarball")"
    tar -C "$dir" -cf - . | xz -9e -T1 >"$tarball.tmp" && mv "$tarball.tmp" "$tarball" || die "cannot write $tarball"
    say "packed $tarball ($(stat -c %s "$tarball") bytes)"
  fi
}

# The shared libraries the binaries in a folder name (beyond libc's).
needed_libs() {
  local f
  for f in "$1"/*; do readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u |
    grep -vE '^(libc|libm|libgcc_s|libstdc\+\+|ld-linux-x86-64|libdl|libpthread|librt)\.so' | tr '\n' ' '
}

# ------------------------------------------------------------------ run ----
bin="" work="" src="$repo" results="" quick=0 bench=1 export_pkg=1 export_started=0 package=""
good_package="" python_package="" crashed=0
runs=()    # --run XML=RC for tools/test_summary.py
exits=()   # --exit NAME=RC
start_s=$SECONDS deadline=0

to=(timeout -k 10)  # TERM at the limit, KILL 10 s later
step() { say "[$((SECONDS - start_s))s] $*"; }

# tmo WANT: WANT seconds, or what is left before the deadline when less
# (0: too little to start).
tmo() {
  local want="$1" left
  ((deadline == 0)) && { echo "$want"; return; }
  left=$((deadline - SECONDS))
  ((left < want)) && want=$left
  ((want < 10)) && want=0
  echo "$want"
}

# not_run NAME WHY: counted skipped.
not_run() {
  say "  $1: not run ($2; counted skipped)"
  exits+=(--exit "$1(not run: $2)=77")
}

# Every binary's libraries must resolve; one that does not is counted failed
# and not run.
declare -A unrunnable=()
check_libs() {
  local f missing
  for f in "${torch_bins[@]}"; do
    [[ -x "$bin/$f" ]] || { unrunnable[$f]="missing"; exits+=(--exit "$f(binary missing)=1"); continue; }
    missing="$(ldd "$bin/$f" 2>&1 | sed -n 's/^\s*\(\S*\) => not found/\1/p' | tr '\n' ' ')"
    if [[ -n "$missing" ]]; then
      unrunnable[$f]="$missing"
      exits+=(--exit "$f(libraries not found: $missing)=1")
      say "  $f: libraries not found: $missing"
    fi
  done
  ldd "$bin/interop_torch_scope_gpu_test" 2>/dev/null | grep -E 'lib(torch|torch_cuda|c10|cudart)\.so' | sed 's/^\s*/      /' >&2
}

# Starts the export of package NAME with FLAGS in the background unless
# work/aoti/NAME.pt2 exists.
export_pids=()
gdb_runs=0
start_export() {
  local name="$1" t; shift
  mkdir -p "$work/aoti"
  if [[ -f "$work/aoti/$name.pt2" ]]; then
    say "package $name: cached ($work/aoti/$name.pt2)"
    return
  fi
  t="$(tmo 300)"
  ((t > 0)) || { say "package $name: no time left to export it"; return; }
  ( cd "$work/aoti" && "${to[@]}" "$t" "$py" "$src/bench/torch_aoti_export.py" "$name.tmp.pt2" "$@" \
      >"$results/export_$name.log" 2>&1 && mv "$name.tmp.pt2" "$name.pt2" && mv "$name.tmp.pt2.json" "$name.pt2.json" ) &
  export_pids+=("$!")
  say "package $name: exporting in the background (flags: ${*:-none}; timeout ${t}s)"
}

wait_exports() {
  local pid
  ((${#export_pids[@]})) && step "waiting for the package export"
  for pid in "${export_pids[@]}"; do wait "$pid"; done
  export_pids=()
}

# Runs a command in a child process with a timeout; prints its log's tail
# when it fails, and gdb's backtrace of a fatal signal when gdb exists.
probe() {
  local name="$1" t rc; shift
  t="$(tmo 120)"
  ((t > 0)) || { not_run "$name" "out of time"; return 1; }
  "${to[@]}" "$t" "$@" >"$results/$name.log" 2>&1
  rc=$?
  if ((rc == 0)); then
    say "  $name: OK ($(grep -m1 -E 'outputs|OK:' "$results/$name.log" | sed 's/^[a-z.]*: *//'))"
    return 0
  fi
  say "  $name: FAILED with exit $rc$( ((rc > 128)) && echo " (signal $((rc - 128)): $(kill -l $((rc - 128)) 2>/dev/null))"); last lines:"
  grep -v '^\s*$' "$results/$name.log" | tail -25 | sed 's/^/      /' >&2
  t="$(tmo 90)"
  if ((rc > 128 && rc != 137 && gdb_runs < 2 && t >= 60)) && command -v gdb >/dev/null; then
    gdb_runs=$((gdb_runs + 1))
    "${to[@]}" "$t" gdb -q -batch -ex run -ex bt -ex "info sharedlibrary" --args "$@" >"$results/$name.gdb.log" 2>&1
    say "  $name under gdb (full log $name.gdb.log):"
    grep -E '^#[0-9]+ ' "$results/$name.gdb.log" | head -25 | sed 's/^/      /' >&2
  fi
  return "$rc"
}

# Each package: C++ with the single-threaded runner (what AotiMethod uses)
# and the default one, Python with the single-threaded runner (and the
# default one when that crashed). Sets crashed when any load failed.
diagnose_package() {
  local pkg="$1" name
  name="$(basename "$pkg" .pt2)"
  if [[ ! -f "$pkg" ]]; then
    say "package $name: not made (see export_$name.log):"
    grep -v Warning "$results/export_$name.log" 2>/dev/null | tail -4 | sed 's/^/      /' >&2
    crashed=1
    return
  fi
  step "loading package $name ($(stat -c %s "$pkg") bytes)"
  if probe "load_${name}_cpp_single" "$bin/tools_torch_aoti_load_probe" "$pkg" single; then
    [[ -n "$good_package" ]] || good_package="$pkg"
  else
    crashed=1
  fi
  probe "load_${name}_cpp_default" "$bin/tools_torch_aoti_load_probe" "$pkg" default || crashed=1
  if probe "load_${name}_python_single" "$py" -X faulthandler "$src/tools/torch_aoti_load.py" "$pkg" --single; then
    [[ -n "$python_package" ]] || python_package="$pkg"
  else
    crashed=1
    probe "load_${name}_python_default" "$py" -X faulthandler "$src/tools/torch_aoti_load.py" "$pkg"
  fi
}

# The default package (or --package); when a load of it failed (not its
# export), a variant whose weights are files in the package instead of data
# in the .so (exported then, about 75 s, unless cached or too little time
# is left).
diagnose_loads() {
  good_package="" python_package="" crashed=0
  wait_exports
  local first="${package:-$work/aoti/decoder.pt2}" outside="$work/aoti/decoder_weights_outside_so.pt2"
  if [[ -z "$package" && ! -f "$first" ]] && ((!export_pkg)); then
    say "no package (--no-export, none cached in $work/aoti): the AOTInductor tests skip, the benchmark runs the MLP"
    return 0
  fi
  diagnose_package "$first"
  # The variant is for a package that was made but did not load.
  [[ -f "$first" ]] && ((crashed)) || return 0
  if [[ ! -f "$outside" ]] && { ((!export_pkg)) || (($(tmo 400) < 250)); }; then
    say "package decoder_weights_outside_so: not tried (--no-export or too little time left; the first package is kept in $work/aoti)"
    return 0
  fi
  start_export decoder_weights_outside_so --constants-outside-so
  wait_exports
  diagnose_package "$outside"
}

gtest() {
  local name="$1" t rc; shift
  local xml="$results/$name.xml"
  [[ -z "${unrunnable[$name]:-}" ]] || return 0  # counted by check_libs
  t="$(tmo 240)"
  ((t > 0)) || { not_run "$name" "out of time"; return 0; }
  step "test $name"
  "${to[@]}" "$t" "$bin/$name" --gtest_output="xml:$xml" "$@" >"$results/$name.log" 2>&1
  rc=$?
  runs+=(--run "$xml=$rc")
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' "$results/$name.log" | tail -6 | sed 's/^/      /' >&2
}

# negative_control NAME TEST: TEST's routing test with routing off must fail.
negative_control() {
  local name="$1" test="$2" t rc
  [[ -z "${unrunnable[$test]:-}" ]] || return 0
  t="$(tmo 120)"
  ((t > 0)) || { not_run "$name" "out of time"; return 0; }
  step "negative control: $test's routing test with ENCORE_TORCH_ROUTE_ALLOCATOR=0 (must fail)"
  ENCORE_TORCH_ROUTE_ALLOCATOR=0 ENCORE_TORCH_AOTI_PACKAGE="$good_package" "${to[@]}" "$t" "$bin/$test" \
    --gtest_filter="*TensorsAllocatedBetweenReplaysSurvive*" >"$results/$name.log" 2>&1
  rc=$?
  exits+=(--exit "$name(routing off fails)=$((rc == 0 ? 1 : 0))")
  grep -E 'Overwritten|Which is|FAILED  \]' "$results/$name.log" | head -4 | sed 's/^/      /' >&2
}

# The tests that need no AOTInductor package (run while one is exported).
run_tests_without_package() {
  gtest interop_torch_tensor_ref_test
  gtest interop_torch_aoti_method_test
  gtest interop_torch_scope_gpu_test
  local t
  t="$(tmo 120)"
  if [[ -n "${unrunnable[example_torch_mlp]:-}" ]]; then
    :
  elif ((t == 0)); then
    not_run example_torch_mlp "out of time"
  else
    step "example torch_mlp"
    "${to[@]}" "$t" "$bin/example_torch_mlp" >"$results/example_torch_mlp.log" 2>&1
    exits+=(--exit "example_torch_mlp=$?")
    tail -1 "$results/example_torch_mlp.log" | sed 's/^/      /' >&2
  fi
  negative_control negative_control_scope interop_torch_scope_gpu_test
}

run_tests_with_package() {
  if [[ -n "$good_package" ]]; then
    ENCORE_TORCH_AOTI_PACKAGE="$good_package" gtest interop_torch_aoti_gpu_test
    negative_control negative_control_aoti interop_torch_aoti_gpu_test
  elif ((export_pkg)) || [[ -n "$package" ]]; then
    say "no package loaded from C++: the AOTInductor GPU tests are not run (counted failed)"
    exits+=(--exit "interop_torch_aoti_gpu_test(no package loads)=1")
  else
    gtest interop_torch_aoti_gpu_test  # skips its package tests
  fi
}

run_bench() {
  local q=() body=(--body mlp) t
  ((quick)) && q=(--quick)
  [[ -n "$good_package" ]] && body=(--body aoti --package "$good_package")
  t="$(tmo 180)"
  if [[ -n "${unrunnable[bench_torch_aoti_bench]:-}" ]]; then
    :
  elif ((t == 0)); then
    not_run bench_torch_aoti_bench "out of time"
  else
    step "benchmark torch_aoti_bench ${body[*]}"
    "${to[@]}" "$t" "$bin/bench_torch_aoti_bench" "${body[@]}" --json "$results/torch_aoti_results.json" "${q[@]}" \
      >"$results/bench_torch_aoti_bench.log" 2>&1
    exits+=(--exit "bench_torch_aoti_bench=$?")
    grep -vE '^wrote ' "$results/bench_torch_aoti_bench.log" | tail -12 >&2
  fi
  local pkgs=("")
  [[ -n "${python_package:-}" ]] && pkgs+=("$python_package")
  for p in "${pkgs[@]}"; do
    local tag="module" args=()
    [[ -n "$p" ]] && tag="package" args=(--package "$p")
    t="$(tmo 150)"
    ((t > 0)) || { not_run "bench_torch_aoti_cudagraph_$tag" "out of time"; continue; }
    step "benchmark torch_aoti_cudagraph.py ($tag)"
    "${to[@]}" "$t" "$py" "$src/bench/torch_aoti_cudagraph.py" "${args[@]}" "${q[@]}" \
      --json "$results/torch_aoti_cudagraph_$tag.json" >"$results/bench_torch_aoti_cudagraph_$tag.log" 2>&1
    exits+=(--exit "bench_torch_aoti_cudagraph_$tag=$?")
    grep -vE '^wrote ' "$results/bench_torch_aoti_cudagraph_$tag.log" | tail -5 >&2
  done
  "$py" "$src/bench/torch_aoti_table.py" "$results/torch_aoti_results.json" "$results"/torch_aoti_cudagraph_*.json \
    >"$results/torch_bench_table.md" 2>"$results/torch_bench_table.err" &&
    { say "results table (torch_bench_table.md):"; cat "$results/torch_bench_table.md" >&2; }
}

# With $OUT: four files (the limit on what comes back is a few files).
pack_out() {
  local rc="$1" line="$2"
  [[ -n "${OUT:-}" ]] || return 0
  mkdir -p "$OUT"
  tar -C "$results" -czf "$OUT/torch_results.tar.gz" --exclude=torch_suite.log . 2>/dev/null
  [[ -f "$results/torch_bench_table.md" ]] && cp "$results/torch_bench_table.md" "$OUT/"
  echo "$line (exit $rc)" >"$OUT/summary.txt"
}

# The run, after find_torch and with bin, work, src and results set.
suite() {
  check_libs
  ((export_pkg && !export_started)) && [[ -z "$package" ]] && start_export decoder
  run_tests_without_package
  diagnose_loads
  run_tests_with_package
  ((bench)) && run_bench
  wait_exports
  step "done"
  local line rc
  line="$("$py" "$src/tools/test_summary.py" "${runs[@]}" "${exits[@]}" 2>&1)"
  rc=$?
  echo "$line" | sed '$d'
  pack_out "$rc" "$(echo "$line" | tail -1)"
  echo "$line" | tail -1
  return "$rc"
}

# Warns when the staged binaries were built for another PyTorch or GPU.
check_manifest() {
  local m="$1" staged
  staged="$(sed -n 's/^torch \([^ ]*\).*/\1/p' "$m")"
  [[ "$staged" == "$torch_version" ]] || say "WARNING: the binaries were built against PyTorch $staged, this is $torch_version"
  grep -qE "^cuda_archs (.*[ ;])?$arch_list([^0-9]|$)" "$m" ||
    say "WARNING: the binaries' GPU code ($(sed -n 's/^cuda_archs //p' "$m")) may not run on sm_$arch_list"
}

# Console to $OUT/torch_suite.log and the terminal.
tee_console() {
  [[ -n "${OUT:-}" ]] || return 0
  mkdir -p "$OUT" || die "cannot create $OUT"
  exec > >(tee "$OUT/torch_suite.log") 2>&1
}

do_prebuilt() {
  local dir=""
  while (($#)); do
    case "$1" in
      --no-export) export_pkg=0 ;;
      --package) package="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift ;;
      --quick) quick=1 ;;
      --no-bench) bench=0 ;;
      -*) die "unknown argument '$1' (see the top of tools/torch_suite.sh)" ;;
      *) dir="$1" ;;
    esac
    shift
  done
  [[ -n "$dir" && -f "$dir/MANIFEST" && -d "$dir/bin" ]] || die "usage: tools/torch_suite.sh prebuilt DIR (a folder staged by 'stage', with MANIFEST and bin/)"
  [[ -z "$package" || -f "$package" ]] || die "no package $package"
  tee_console
  work="$(cd "$dir" && pwd)"
  bin="$work/bin" src="$work"
  results="$work/results"
  rm -rf "$results" && mkdir -p "$results" || die "cannot create $results"
  deadline=$((start_s + ${TORCH_SUITE_BUDGET:-480}))
  say "prebuilt binaries in $bin ($(sed -n 's/^commit //p' "$work/MANIFEST")); budget ${TORCH_SUITE_BUDGET:-480} s"
  find_torch
  check_manifest "$work/MANIFEST"
  suite
}

do_run() {
  local build="$repo/torch_build"
  while (($#)); do
    case "$1" in
      --build) build="$2"; shift ;;
      --quick) quick=1 ;;
      --no-bench) bench=0 ;;
      *) die "unknown argument '$1' (see the top of tools/torch_suite.sh)" ;;
    esac
    shift
  done
  tee_console
  mkdir -p "$build" && build="$(cd "$build" && pwd)" || die "cannot create $build"
  work="$build" bin="$build" src="$repo" results="$build/results"
  rm -rf "$results" && mkdir -p "$results" || die "cannot create $results"
  find_torch
  start_export decoder  # while the build runs
  export_started=1
  configure_and_build "$build" "$results" "$arch_list" "$(nproc)"
  suite
}

case "${1:-}" in
  deps) shift; do_deps "$@" ;;
  stage) shift; do_stage "$@" ;;
  prebuilt) shift; do_prebuilt "$@" ;;
  run) shift; do_run "$@" ;;
  *) do_run "$@" ;;
esac
