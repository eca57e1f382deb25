#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The two-GPU runs in one command, on a machine with 2 GPUs (a
# gpu_bin staged by `tools/gpu_suite.sh build`, or the same layout by hand):
#
#   bench/two_gpu.sh GPU_BIN OUT_DIR [tests|examples|bench]...   (default: all three)
#
#   tests     concurrent_votes_gpu_test (two methods with collectives voting
#             concurrently, 1,000 calls each; a vote that times out) and
#             consensus_gpu_test (its two-GPU NCCL tests included)
#   examples  tensor_parallel with the default flags; with
#             ENCORE_METHOD_FLAGS=tp_layer:verify=2; with --verify 2 and a
#             forced mismatch on rank 1 (--perturb-on 1); with
#             ENCORE_METHOD_FLAGS=tp_layer:verify=2 and --perturb-on 0; with
#             --refuse-on 1
#   bench     tp_bench (K = 2, 16; N = 4096, 1M; eager, raw graph, encore
#             with binding=staged|auto|direct taking turns; prints the binding
#             each got and binding_reason), then torch_tp_bench.py
#
# One log per step in OUT_DIR (GoogleTest XML for the tests, JSON for the
# benchmarks); the last line is `N passed, N failed`. NVLink multicast stays
# off (NCCL_NVLS_ENABLE=0): on a shared host it can take the GPUs down.
set -uo pipefail
gpu_bin="${1:?usage: two_gpu.sh GPU_BIN OUT_DIR [tests|examples|bench]...}"
out="${2:?usage: two_gpu.sh GPU_BIN OUT_DIR [tests|examples|bench]...}"
shift 2
steps=("$@")
((${#steps[@]})) || steps=(tests examples bench)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
out="$(cd "$out" && pwd)"
gpu_bin="$(cd "$gpu_bin" && pwd)"
passed=0 failed=0

step() {  # name timeout_s command...
  local name="$1" limit="$2" rc t0
  shift 2
  t0=$(date +%s%N)
  timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  printf '%-42s rc=%-3d %6d ms\n' "$name" "$rc" "$((($(date +%s%N) - t0) / 1000000))"
  if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); tail -n 30 "$out/$name.log"; fi
}

nvidia-smi -L >"$out/gpus.log" 2>&1
nvidia-smi topo -m >>"$out/gpus.log" 2>&1
for s in "${steps[@]}"; do
  case "$s" in
    tests)
      for t in concurrent_votes_gpu_test consensus_gpu_test; do
        step "$t" 300 "$gpu_bin/tests/$t" --gtest_output="xml:$out/$t.xml"
      done
      ;;
    examples)
      tp="$gpu_bin/examples/tensor_parallel"
      step tensor_parallel_default 120 "$tp"
      step tensor_parallel_verify2 120 env ENCORE_METHOD_FLAGS=tp_layer:verify=2 "$tp"
      step tensor_parallel_verify2_mismatch_rank1 120 "$tp" --verify 2 --perturb-on 1
      step tensor_parallel_verify2env_mismatch_rank0 120 env ENCORE_METHOD_FLAGS=tp_layer:verify=2 "$tp" --perturb-on 0
      step tensor_parallel_refuse_rank1 120 "$tp" --refuse-on 1
      ;;
    bench)
      step tp_bench 300 "$gpu_bin/bench/tp_bench" --json "$out/tp_results.json"
      step torch_tp_bench 300 bash -c "cd '$gpu_bin/bench' && python3 torch_tp_bench.py --json '$out/torch_tp_results.json'"
      ;;
    *) echo "unknown step $s" >&2; exit 2 ;;
  esac
done
echo "$passed passed, $failed failed"
((failed == 0))
