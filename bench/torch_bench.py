#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's side of encore_bench: the same K tiny kernels per call.

For K in {1, 8, 32, 128, 512}, on 256 floats, with the caller's input and
output tensors rotating among 4 each:
  eager          y = x + 1; then K-1 times y.add_(1)
  replay+copy    static_in.copy_(x); g.replay(); y.copy_(static_out)
                 (what a user of torch.cuda.CUDAGraph writes for new tensors)
  replay         g.replay() alone
CPU us/call: time to submit N calls (no sync) / N; end-to-end us/call: submit
N calls + torch.cuda.synchronize() / N; each the median of 7 repeats.

    python3 bench/torch_bench.py [--json PATH] [--quick]

Prints a table, writes JSON to PATH (default ./torch_results.json) and a copy
to $OUT/torch_results.json and $RESULTS/torch_results.json when those are set
(tools/gpu_suite.sh bench sets RESULTS). If encore_bench's bench_results.json
is found there too, it also checks the target "encore's CPU time per call at
K=1 at least 5x less than PyTorch's replay with copies". Exits 77 when no CUDA
device is visible, 1 if a result is wrong.
"""

import argparse
import json
import os
import sys

from bench_common import measure, result_dirs, write_json

KS = [1, 8, 32, 128, 512]
ELEMS = 256
BUFFERS = 4


def bench_k(torch, k, n, repeats):
    dev = torch.device("cuda")
    xs = [torch.full((ELEMS,), 10.0 * (j + 1), device=dev) for j in range(BUFFERS)]
    ys = [torch.empty(ELEMS, device=dev) for _ in range(BUFFERS)]
    errors = []

    def eager(i):
        y = xs[i % BUFFERS] + 1
        for _ in range(k - 1):
            y.add_(1)
        return y

    row = {"k": k, "n": n}
    row["eager"] = measure(torch, n, repeats, 20, [("eager", eager)])["eager"]
    if not torch.equal(eager(0), torch.full((ELEMS,), 10.0 + k, device=dev)):
        errors.append(f"eager K={k}: wrong result")

    # Capture as PyTorch's documentation does: warm up on a side stream first.
    static_in = xs[0].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            static_out = static_in + 1
            for _ in range(k - 1):
                static_out.add_(1)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = static_in + 1
        for _ in range(k - 1):
            static_out.add_(1)

    def replay_copy(i):
        static_in.copy_(xs[i % BUFFERS])
        g.replay()
        ys[i % BUFFERS].copy_(static_out)

    row["replay_copy"] = measure(torch, n, repeats, 20, [("replay_copy", replay_copy)])["replay_copy"]
    replay_copy(1)
    torch.cuda.synchronize()
    if not torch.equal(ys[1], torch.full((ELEMS,), 20.0 + k, device=dev)):
        errors.append(f"replay+copy K={k}: wrong result")

    row["replay"] = measure(torch, n, repeats, 20, [("replay", lambda i: g.replay())])["replay"]
    del g
    return row, errors


def find_encore_results(json_path):
    candidates = [os.path.join(d, "bench_results.json") for d in result_dirs()]
    candidates.append(os.path.join(os.path.dirname(os.path.abspath(json_path)), "bench_results.json"))
    candidates.append("bench_results.json")
    for c in candidates:
        if os.path.isfile(c):
            try:
                with open(c) as f:
                    return c, json.load(f)
            except (OSError, ValueError):
                continue
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="torch_results.json", help="where to write the JSON results")
    ap.add_argument("--quick", action="store_true", help="few calls and repeats: a smoke run")
    args = ap.parse_args()

    try:
        import torch
    except ImportError as e:
        print(f"torch_bench: PyTorch is not installed ({e}); skipping", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("encore: no CUDA device visible (torch.cuda.is_available() is False); torch_bench needs a GPU, "
              "exiting with 77", file=sys.stderr)
        return 77

    repeats = 3 if args.quick else 7
    name = torch.cuda.get_device_name(0)
    print(f"torch_bench on {name}, torch {torch.__version__}, CUDA {torch.version.cuda}"
          + (" [--quick: few calls, numbers are rough]" if args.quick else ""))
    print(f"\nper call, median of {repeats} repeats; us = microseconds")
    print(f"{'K':>5} {'N':>6} | {'eager':<19} | {'replay + copy_ in/out':<21} | {'replay alone':<19}")
    print(f"{'':>5} {'':>6} | {'CPU':>8} {'end2end':>10} | {'CPU':>8} {'end2end':>12} | {'CPU':>8} {'end2end':>10}")
    rows, errors = [], []
    for k in KS:
        n = 200 if args.quick else (500 if k >= 512 else 2000)
        row, errs = bench_k(torch, k, n, repeats)
        rows.append(row)
        errors += errs
        e, c, r = row["eager"], row["replay_copy"], row["replay"]
        print(f"{k:>5} {n:>6} | {e['cpu_us']:>8.2f} {e['e2e_us']:>10.2f} | {c['cpu_us']:>8.2f} {c['e2e_us']:>12.2f}"
              f" | {r['cpu_us']:>8.2f} {r['e2e_us']:>10.2f}")

    result = {
        "bench": "torch_bench",
        "device": name,
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "quick": args.quick,
        "elements": ELEMS,
        "buffers_rotated": BUFFERS,
        "repeats": repeats,
        "per_call": rows,
        "errors": errors,
    }

    # The target that needs both benchmarks.
    src, enc = find_encore_results(args.json)
    torch_k1 = rows[0]["replay_copy"]["cpu_us"]
    if enc:
        enc_k1 = next((r["encore"]["cpu_us"] for r in enc.get("per_call", []) if r.get("k") == 1), None)
        if enc_k1:
            ratio = torch_k1 / enc_k1
            met = ratio >= 5.0
            result["target_vs_encore"] = {"rule": "encore CPU/call at K=1 >= 5x less than PyTorch replay + copy_",
                                          "encore_results": src, "encore_cpu_us": enc_k1,
                                          "torch_replay_copy_cpu_us": torch_k1, "ratio": round(ratio, 3),
                                          "limit": 5.0, "met": met}
            print(f"\ntarget: encore CPU/call at K=1 >= 5x less than PyTorch replay + copy_: "
                  f"{torch_k1:.2f} / {enc_k1:.2f} = {ratio:.2f}  {'met' if met else 'MISSED'}  (encore from {src})")
    else:
        print("\n(no bench_results.json from encore_bench found: the PyTorch target is not checked here)")

    text = json.dumps(result, indent=2) + "\n"
    write_json(text, args.json, "torch_results.json", errors)
    for e in errors:
        print(f"torch_bench: ERROR: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
