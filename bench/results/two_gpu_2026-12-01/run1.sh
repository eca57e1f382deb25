#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 17 call 1: two-GPU runs (bench/two_gpu.sh), verify_gpu_test, then
# NVTX before/after (encore_bench and replay_micro 1 at 4787943 and 006e7d0,
# taking turns: 3 rounds of replay_micro, 2 of encore_bench). Usage: gpu_bin_17/run1.sh OUT_DIR [nvtx_budget_s]
set -uo pipefail
O="$1"; budget="${2:-150}"
mkdir -p "$O/nvtx"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi -L; ldconfig -p | grep -i nccl; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())'; } >"$O/env.log" 2>&1
gpu_bin_17/bench/two_gpu.sh gpu_bin_17 "$O/two_gpu" ${STEPS:-} >"$O/two_gpu_summary.log" 2>&1
timeout 200 gpu_bin_17/tests/verify_gpu_test --gtest_output="xml:$O/verify_gpu_test.xml" >"$O/verify_gpu_test.log" 2>&1
echo "verify_gpu_test rc=$?" >>"$O/two_gpu_summary.log"
B=gpu_bin_17base H=gpu_bin_17/bench
start=$SECONDS
for r in 1 2 3; do
  if ((r == 2)); then order="head base"; else order="base head"; fi
  for w in $order; do
    if [[ $w == base ]]; then e=$B/encore_bench m=$B/replay_micro; else e=$H/encore_bench_head m=$H/replay_micro_head; fi
    timeout 60 "$m" 1 >"$O/nvtx/rm_${w}$r.log" 2>&1
    if ((r <= ${EB_ROUNDS:-2} && SECONDS - start < budget)); then
      env -u OUT -u RESULTS timeout 90 "$e" --json "$O/nvtx/eb_${w}$r.json" >"$O/nvtx/eb_${w}$r.log" 2>&1
    fi
    echo "round $r $w done at $((SECONDS - start)) s" >>"$O/nvtx/order.log"
  done
done
