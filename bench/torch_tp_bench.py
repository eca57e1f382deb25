#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's side of tp_bench: a tensor-parallel step on every visible GPU.

One process per visible GPU (torch.multiprocessing.spawn, NCCL over
tcp://127.0.0.1). The work of one call, for (K, N) with K even, on rank r:
  y = x * (r + 1); K/2 - 1 times y.add_(1); dist.all_reduce(y) (sum);
  K/2 times y.add_(1)
for (K, N) in {2, 16} x {4096, 1M}, with the caller's x and y
rotating between 2 tensors each:
  eager          the work on the caller's tensors
  replay+copy    static_x.copy_(x); g.replay(); y.copy_(static_y)
                 (g: a torch.cuda.CUDAGraph of the work, all-reduce included)
  replay         g.replay() alone (the floor)
CPU us/call: time to submit N calls (no sync) / N; end-to-end us/call: submit
N calls + torch.cuda.synchronize() / N; each the median of 7 repeats, the
variants taking turns per repeat and the ranks starting each one together
(dist.barrier). The table shows the slowest rank; the JSON has every rank.

    python3 bench/torch_tp_bench.py [--json PATH] [--quick]

Prints a table, writes JSON to PATH (default ./torch_tp_results.json) and a
copy to $OUT/torch_tp_results.json and $RESULTS/torch_tp_results.json when
those are set. Exits 77 when no CUDA device (or no NCCL) is available, 1 if a
result is wrong or a rank fails.
"""

import argparse
import inspect
import json
import os
import socket
import sys
import time

from bench_common import measure, write_json

CONFIGS = [(2, 4096), (2, 1 << 20), (16, 4096), (16, 1 << 20)]
VARIANTS = ["eager", "replay_copy", "replay"]
WARMUP = 20


def bench_config(torch, dist, rank, world, k, n, calls, repeats, errors):
    dev = torch.device("cuda", rank)
    scale = float(rank + 1)
    x0 = torch.arange(n, device=dev, dtype=torch.int64).remainder(97).to(torch.float32)
    xs = [x0.clone() for _ in range(2)]
    ys = [torch.empty(n, device=dev) for _ in range(2)]
    s = world * (world + 1) // 2
    want = x0 * s + float(world * (k // 2 - 1) + k // 2)

    def work(x, y):
        torch.mul(x, scale, out=y)
        for _ in range(k // 2 - 1):
            y.add_(1)
        dist.all_reduce(y)
        for _ in range(k // 2):
            y.add_(1)

    # Capture as PyTorch's documentation does: warm up on a side stream first
    # (the communicator already exists: worker() ran an all_reduce).
    static_x = xs[0].clone()
    static_y = torch.empty(n, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            work(static_x, static_y)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    kw = {}
    if "capture_error_mode" in inspect.signature(torch.cuda.graph).parameters:
        kw["capture_error_mode"] = "thread_local"  # NCCL's watchdog thread may query events meanwhile
    with torch.cuda.graph(g, **kw):
        work(static_x, static_y)
    torch.cuda.synchronize()

    def replay_copy(i):
        static_x.copy_(xs[i % 2])
        g.replay()
        ys[i % 2].copy_(static_y)

    calls_of = {"eager": lambda i: work(xs[i % 2], ys[i % 2]), "replay_copy": replay_copy,
                "replay": lambda i: g.replay()}
    row = measure(torch, calls, repeats, WARMUP, [(v, calls_of[v]) for v in VARIANTS], barrier=dist.barrier)

    def check(got, what):
        torch.cuda.synchronize()
        if torch.equal(got, want):
            return
        bad = (got != want).nonzero()
        j = int(bad[0].item()) if bad.numel() else 0
        errors.append(f"rank {rank}, K={k} N={n}, {what}: element {j} is {got[j].item()}, expected {want[j].item()}")

    # The timed calls of eager and replay+copy both wrote ys: one more call of
    # each into NaN-filled tensors (every rank does the same calls, so the
    # all-reduces match up), then replay alone into a NaN-filled static_y.
    nan = float("nan")
    for name in ("eager", "replay_copy"):
        for i in range(2):
            ys[i].fill_(nan)
            static_y.fill_(nan)
            calls_of[name](i)
            check(ys[i], f"{name} (output {i})")
    static_y.fill_(nan)
    g.replay()
    check(static_y, "replay (static output)")
    torch.cuda.synchronize()
    del g
    return row


def worker(rank, world, port, quick, q):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    kw = {"device_id": dev} if "device_id" in inspect.signature(dist.init_process_group).parameters else {}
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, **kw)
    dist.all_reduce(torch.zeros(1, device=dev))  # create the communicator before any capture
    torch.cuda.synchronize()
    repeats = 2 if quick else 7
    errors, rows = [], []
    for k, n in CONFIGS:
        calls = 50 if quick else (1000 if n == 4096 else 300)
        rows.append({"k": k, "n": n, "calls": calls,
                     **bench_config(torch, dist, rank, world, k, n, calls, repeats, errors)})
    mine = {"rank": rank, "device": torch.cuda.get_device_name(rank), "rows": rows, "errors": errors}
    gathered = [None] * world
    dist.all_gather_object(gathered, mine)
    if rank == 0:
        nccl = torch.cuda.nccl.version()
        result = {"bench": "torch_tp_bench", "device": gathered[0]["device"],
                  "devices": [m["device"] for m in gathered], "ranks": world,
                  "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
                  "nccl_version": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
                  "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"), "quick": quick,
                  "repeats": repeats, "warmup": WARMUP, "buffers_rotated": 2, "configs": [],
                  "errors": [e for m in gathered for e in m["errors"]]}
        print(f"torch_tp_bench on {world} x {result['device']}, torch {torch.__version__}, "
              f"CUDA {torch.version.cuda}, NCCL {result['nccl_version']}"
              + (" [--quick: few calls, numbers are rough]" if quick else ""))
        print(f"\nper call, slowest rank, median of {repeats} repeats; us = microseconds")
        print(f"{'K':>3} {'N':>8} {'calls':>5} | {'eager':<19} | {'replay + copy_ in/out':<21} | {'replay alone':<19}")
        print(f"{'':>3} {'':>8} {'':>5} | {'CPU':>8} {'end2end':>10} | {'CPU':>8} {'end2end':>12}"
              f" | {'CPU':>8} {'end2end':>10}")
        for ci, (k, n) in enumerate(CONFIGS):
            cfg = {"k": k, "n": n, "calls": rows[ci]["calls"], "slowest": {}}
            for v in VARIANTS:
                per_rank = [m["rows"][ci][v] for m in gathered]
                cfg[v] = per_rank
                cfg["slowest"][v] = {t: max(p[t] for p in per_rank) for t in ("cpu_us", "e2e_us")}
            result["configs"].append(cfg)
            e, c, r = (cfg["slowest"][v] for v in VARIANTS)
            print(f"{k:>3} {n:>8} {cfg['calls']:>5} | {e['cpu_us']:>8.2f} {e['e2e_us']:>10.2f} | "
                  f"{c['cpu_us']:>8.2f} {c['e2e_us']:>12.2f} | {r['cpu_us']:>8.2f} {r['e2e_us']:>10.2f}", flush=True)
        q.put(result)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="torch_tp_results.json", help="where to write the JSON results")
    ap.add_argument("--quick", action="store_true", help="few calls and repeats: a smoke run")
    ap.add_argument("--timeout", type=float, default=170.0, help="seconds before the ranks are ended as hung")
    args = ap.parse_args()

    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError as e:
        print(f"torch_tp_bench: PyTorch is not installed ({e}); skipping", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("encore: no CUDA device visible (torch.cuda.is_available() is False); torch_tp_bench needs a GPU, "
              "exiting with 77", file=sys.stderr)
        return 77
    if not dist.is_available() or not dist.is_nccl_available():
        print("torch_tp_bench: this PyTorch has no torch.distributed with NCCL; skipping, exiting with 77",
              file=sys.stderr)
        return 77

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # the ranks inherit it; a value already set is kept
    world = torch.cuda.device_count()
    q = mp.get_context("spawn").SimpleQueue()
    errors, results = [], []
    procs = mp.spawn(worker, args=(world, free_port(), args.quick, q), nprocs=world, join=False)
    deadline = time.monotonic() + args.timeout
    try:
        while not procs.join(timeout=0.5):  # drain the queue meanwhile, so no rank blocks on a full pipe
            while not q.empty():
                results.append(q.get())
            if time.monotonic() > deadline:
                errors.append(f"the ranks did not finish within {args.timeout:.0f} s; ended them")
                for p in procs.processes:
                    if p.is_alive():
                        p.terminate()
                        p.join(10)
                break
    except Exception as e:  # a rank raised or died; spawn has ended the others
        errors.append(f"a rank failed: {e}")
    while not q.empty():
        results.append(q.get())

    result = results[0] if results else {"bench": "torch_tp_bench", "ranks": world, "quick": args.quick,
                                         "errors": []}
    if not results and not errors:
        errors.append("rank 0 sent no results")
    errors = result["errors"] + errors
    result["errors"] = errors

    text = json.dumps(result, indent=2) + "\n"
    write_json(text, args.json, "torch_tp_results.json", errors)
    for e in errors:
        print(f"torch_tp_bench: ERROR: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
