# SPDX-License-Identifier: Apache-2.0
"""CPU per call of a one-op step from Python, ways taking turns in one run:

  eager            x + y, launched by PyTorch
  graph_replay     torch.cuda.CUDAGraph.replay() alone over fixed buffers
  graph_copy       copy_ of both inputs, replay(), clone() of the output
  encore           an encore method called with two inputs at new addresses
                   on every call (1024 pairs, each used once per round)
  encore_2pairs    the same method on two pairs taking turns (addresses
                   that recur, as a caching allocator's do)

Each round times N calls of every way (the order rotating), syncing the
device only at the ends; the table gives the median over rounds of CPU time
per call (this thread's CPU clock) and of wall time per call. Exits 1,
saying why in its last line, when an encore way did not replay over the
rounds (bench_common.graphs_not_run) or its results differ from eager's.

  python3 bench/python_step_bench.py [--n 1024] [--rounds 7] [--size 256]
"""

import argparse
import statistics
import sys
import time

import torch

import encore
from bench_common import graphs_not_run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size", type=int, default=256)
    a = ap.parse_args()
    dev = "cuda"
    xs = [torch.randn(a.size, device=dev) for _ in range(a.n)]
    ys = [torch.randn(a.size, device=dev) for _ in range(a.n)]

    def step(x, y):
        return x + y

    sx, sy = xs[0].clone(), ys[0].clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(sx, sy)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        sout = step(sx, sy)
    m = encore.method(step, name="python_step_bench", constants=[], flags="warmup=2")
    for i in range(8):
        m(xs[i], ys[i])
    torch.cuda.synchronize()

    def eager():
        for x, y in zip(xs, ys):
            step(x, y)

    def graph_replay():
        for _ in range(a.n):
            g.replay()

    def graph_copy():
        for x, y in zip(xs, ys):
            sx.copy_(x)
            sy.copy_(y)
            g.replay()
            sout.clone()

    def encore_call():
        for x, y in zip(xs, ys):
            m(x, y)

    m2 = encore.method(step, name="python_step_bench_2pairs", constants=[], flags="warmup=2")
    pairs = [(xs[0], ys[0]), (xs[1], ys[1])] * (a.n // 2)

    def encore_2pairs():
        for x, y in pairs:
            m2(x, y)

    m3 = encore.method(step, name="python_step_bench_reuse", constants=[], flags="warmup=2,outputs=reuse")

    def encore_reuse():
        for x, y in pairs:
            m3(x, y)

    ways = {"eager": eager, "graph_replay": graph_replay, "graph_copy": graph_copy, "encore": encore_call,
            "encore_2pairs": encore_2pairs, "encore_reuse": encore_reuse}
    cpu = {k: [] for k in ways}
    wall = {k: [] for k in ways}
    names = list(ways)
    methods = {"encore": m, "encore_2pairs": m2, "encore_reuse": m3}
    before = {k: meth.report() for k, meth in methods.items()}
    for r in range(a.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            torch.cuda.synchronize()
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            ways[k]()
            c1 = time.thread_time_ns()
            torch.cuda.synchronize()
            w1 = time.perf_counter_ns()
            cpu[k].append((c1 - c0) / a.n / 1000)
            wall[k].append((w1 - w0) / a.n / 1000)
    not_run = {k: why[0] for k, meth in methods.items() if (why := graphs_not_run(meth.report(), before[k]))}
    # The values: encore's results equal eager's.
    wrong = [i for i in range(4) if not torch.equal(m(xs[i], ys[i]), step(xs[i], ys[i]))]
    for name, meth in (("encore", m), ("encore_2pairs", m2)):
        rep = meth.report()
        print(f"{name}: binding={rep['binding']} ({rep['binding_reason']}) replays={rep['replays']} "
              f"captures={rep['captures']} exec_variants={rep['exec_variants']} eager_calls={rep['eager_calls']}")
    rep = m.report()
    print(f"encore: binding={rep['binding']} replays={rep['replays']} captures={rep['captures']} "
          f"exec_variants={rep['exec_variants']} eager_calls={rep['eager_calls']}")
    parts(a, m, xs, ys)
    base = statistics.median(cpu["graph_replay"])
    copyb = statistics.median(cpu["graph_copy"])
    print(f"{'way':14s} {'cpu us/call':>12s} {'wall us/call':>13s} {'x replay':>9s} {'x copy':>7s}")
    for k in names:
        c = statistics.median(cpu[k])
        print(f"{k:14s} {c:12.2f} {statistics.median(wall[k]):13.2f} {c / base:9.2f} {c / copyb:7.2f}")
    if wrong:
        print(f"FAILED: encore's results differ from eager's on calls {wrong}")
    if not_run:
        print("FAILED: graphs did not run: " + "; ".join(f"{k}: {why}" for k, why in not_run.items()))
    return 1 if wrong or not_run else 0


def part_loops(a, m, xs, ys):
    """Loops of a.n calls of each part of an encore call, results dropped as
    a caller's would be."""
    out = torch.empty(a.size, device="cuda")
    stream = torch._C._cuda_getCurrentRawStream(0)
    pair = (xs[5], ys[5])
    tmpl = torch.empty(0, device="cuda")
    n, size, f32 = a.n, a.size, torch.float32

    def call():
        for _ in range(n):
            m(*pair)

    def fast_path():
        for _ in range(n):
            m._cm.fast.call(m, pair)

    def general_path():
        for _ in range(n):
            m._call(pair, {})

    def call_new():
        for x, y in zip(xs, ys):
            m(x, y)

    def fast_path_new():
        for x, y in zip(xs, ys):
            m._cm.fast.call(m, (x, y))

    def new_empty():
        for _ in range(n):
            tmpl.new_empty((size,))

    def empty():
        for _ in range(n):
            torch.empty(size, device="cuda")

    def empty_as_fast_path():
        for _ in range(n):
            torch.empty((size,), dtype=f32, device=0)

    def run_one_set():
        for _ in range(n):
            m._cm.run(pair, (out,), stream)

    def run_new():
        for x, y in zip(xs, ys):
            m._cm.run((x, y), (out,), stream)

    def current_stream():
        for _ in range(n):
            torch._C._cuda_getCurrentRawStream(0)

    return {"call": call, "fast path": fast_path, "general path": general_path, "call (new addresses)": call_new,
            "fast path (new addresses)": fast_path_new, "new_empty": new_empty, "torch.empty": empty,
            "torch.empty as the fast path": empty_as_fast_path, "C++ run (one address set)": run_one_set,
            "C++ run (new addresses)": run_new, "raw current stream": current_stream}


def parts(a, m, xs, ys):
    """Where an encore call's CPU goes: its parts timed alone. The fast path
    is one C++ call (python/src/py_fast_call.cc): the tensors' checks and
    reads, torch.empty for the output as it calls it (dtype, device index),
    the C++ run and the call state; `the rest` is what it adds to those two."""
    def timed(fn):
        torch.cuda.synchronize()
        c0 = time.thread_time_ns()
        fn()
        c1 = time.thread_time_ns()
        torch.cuda.synchronize()
        return (c1 - c0) / a.n / 1000

    loops = part_loops(a, m, xs, ys)
    m(xs[5], ys[5])
    m(xs[5], ys[5])
    fast = m._cm.fast  # private: the parts of a call are what this measures
    print(f"parts: fast path set: {fast is not None}")
    if fast is None:
        loops = {k: v for k, v in loops.items() if not k.startswith("fast path")}
    else:
        missed = sum(fast.call(m, (x, y)) is encore._method._MISS for x, y in zip(xs, ys))
        print(f"parts: the fast path missed {missed} of {a.n} calls at new addresses (0 expected)")
    for r in range(2):
        t = {k: timed(fn) for k, fn in loops.items()}
        print(f"parts round {r + 1}: " + ", ".join(f"{k} {v:.2f} us" for k, v in t.items()))
        if "fast path (new addresses)" in t:
            fast, empty, run = (t["fast path (new addresses)"], t["torch.empty as the fast path"],
                                t["C++ run (new addresses)"])
            print(f"parts round {r + 1}: fast path (new addresses) {fast:.2f} us = torch.empty {empty:.2f} + "
                  f"C++ run {run:.2f} + the rest {fast - empty - run:.2f}; Method.__call__ adds "
                  f"{t['call (new addresses)'] - fast:.2f}")


if __name__ == "__main__":
    sys.exit(main())
