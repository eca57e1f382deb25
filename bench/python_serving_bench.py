# SPDX-License-Identifier: Apache-2.0
"""Serving one fixed trace of requests of changing batch sizes: transformers'
LlamaModel as an encoder (examples/python/serving.py: [b, 64] token ids ->
last hidden states, random weights, bf16), --requests requests (default
2,000) whose batch sizes are Zipf-distributed over 1..--max-batch (fixed
seed), sent back to back: a request is sent when the previous response is
ready. Ways taking turns in one run, the order rotating round by round
(bench/serving_ways.py builds them): eager; hand-written torch.cuda.graphs
as vLLM makes them (buckets 1, 2, 4, ..., --max-batch); torch.compile
mode="reduce-overhead" with static shapes (padded to those buckets) and
with the batch dim marked dynamic; encore with the buckets listed and
precaptured, with learned buckets, and with capture=background, around
the eager model; and encore with the buckets listed and precaptured
around torch.compile(mode="default", dynamic=False) (encore_compiled: a
serving engine's graphs around the compiled model, as vLLM makes them:
the compiled function run once at every bucket, which compiles it there,
then precapture of every bucket; its start-up is both. Precapture warms
up at the largest bucket only, and a compile must not happen inside a
capture).

compile_static and encore_compiled both pad a request to the smallest
bucket >= b and keep one graph per bucket (compile_static is fed the
padded rows by hand: fed raw, every distinct batch size would compile
anew), so they replay the same padded rows (padded_share, reported for
each way); compile_dynamic is the way with a graph per distinct size.
What differs per request: compile_static's two kernels (copy, zero) before
its graph, dynamo's guards, AOTAutograd's wrapper and the cudagraph trees'
checks, and a clone of b rows after; encore_compiled's copy and zeroing
inside its graph, a copy of the compiled function's B result rows into
encore's output inside the graph and b rows out of it, and no Python of
the compiled function on a request (it runs only at warmups and
captures). serving_ways.py says how each way is built.

Per way and round, from a fresh start (the allocator's cache emptied; for
a way that compiles dynamo and PyTorch's cudagraph trees reset, inductor's
in-memory caches cleared, and, unless --warm-cache, inductor's and
Triton's caches on disk its own: new in its first round, which compiles
cold, kept for its later rounds, which compile warm; never another way's,
so no way's compile time depends on which compiled before it): the time
from the model being ready to the first response (start-up included:
captures, precapture, compiles); request latency
(sent to response ready on the host side of a sync) p50 and p99 over the
first --first requests and over all; requests/s over all and over the
requests after the first --first (steady state), both over the requests'
own time; start-up and capture time per bucket; the graph memory held at
the end (device memory from cudaMemGetInfo, PyTorch's allocated and
reserved, the allocator's cache emptied; encore's graph_memory_bytes) and
per extra bucket (against one capture of the largest bucket alone, probed
once); the share of padded rows among the rows replayed. Each metric's
median, min and max over the rounds (at least 3).

Every response is checked against the model run eagerly on the same
request, once, before the rounds: a response of other shape, or a row off
by more than --tolerance (relative L2 over a fixed random projection of
the row's hidden states to 8 values per token: kernels that see a padded
bucket, or fused ones, may sum in another order, which moves a row by
about what bf16 rounding does, about 1% against float32 on a small model
on the CPU; a wrong, stale or zero row is off by about 100%), fails the run
(exit 1), as do a way that could not run (its error is reported; the
others run), an encore method that did not do what its flags say
(encore_compiled: every request replayed, none eager), a compiled way
that compiled a different number of graphs in some round, and
encore_compiled compiling other than one graph per bucket (a compile at a
capture or during the traffic).
The largest row error of each way is printed with its check.

Targets, printed as PASS or MISS, which do not change the exit status:
with capture=background the first response within 5 ms of eager's and
p99 over the first --first requests at most 1.2x eager's; each encore
way around the eager model at a steady-state requests/s of at least 0.98x
the hand graphs'; encore_compiled at a steady-state requests/s of at
least 0.98x compile_static's, and its start-up (compile + precapture of
every bucket) below compile_static's first response; device
memory per extra bucket at most the hand graphs' + 10%; no batch size
slower than eager (its median latency after the first --first requests,
pooled over the rounds, over 1.05x eager's: the allowance for noise);
precapture of every bucket no slower than the hand graphs' start-up. A
target holds when it holds in every round.
The JSON (--json, and python_serving_bench.json in $OUT / $RESULTS) is
what tools/perf_table.py reads.

  python3 bench/python_serving_bench.py [--requests 2000] [--rounds 3] [--layers 4] [--ways W,...]
"""

import argparse
import gc
import math
import os
import shlex
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "python"))

from bench_common import MIN_ROUNDS, Results  # noqa: E402
from serving_report import record, report  # noqa: E402
from serving_ways import COMPILING, WAYS, make  # noqa: E402

MiB = 2.0 ** 20


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--first", type=int, default=200, help="the early requests reported apart")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--max-batch", type=int, default=128, help="the largest batch; buckets 1, 2, 4, ... up to it")
    ap.add_argument("--zipf", type=float, default=1.1, help="P(batch b) proportional to b**-zipf")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warmups", type=int, default=2, help="eager runs before a capture (hand: per bucket)")
    ap.add_argument("--tolerance", type=float, default=0.05, help="largest relative error of a response row")
    ap.add_argument("--ways", default=",".join(WAYS), help="comma-separated subset of " + ",".join(WAYS))
    ap.add_argument("--warm-cache", action="store_true",
                    help="keep the inductor and Triton caches already set, shared by the compiled ways")
    ap.add_argument("--json", default=os.path.join(tempfile.gettempdir(), "python_serving_bench.json"))
    a = ap.parse_args(argv)
    a.ways = [w for w in a.ways.split(",") if w]
    a.buckets = tuple(2 ** i for i in range(a.max_batch.bit_length()) if 2 ** i <= a.max_batch)
    if a.buckets[-1] != a.max_batch:
        a.buckets += (a.max_batch,)
    bad = [w for w in a.ways if w not in WAYS]
    if bad or "eager" not in a.ways or a.rounds < MIN_ROUNDS or not 0 < a.first < a.requests:
        ap.error(f"--ways {bad} not among {list(WAYS)} or without eager (the reference), or --rounds {a.rounds} < "
                 f"{MIN_ROUNDS}, or --first {a.first} not in 1..{a.requests - 1}")
    return a


def fresh_caches():
    """Inductor's and Triton's caches in a new directory, set before torch is
    imported, so compile times do not depend on earlier runs; each way that
    compiles gets its own below it (own_caches)."""
    root = tempfile.mkdtemp(prefix="encore_serving_bench_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "triton")
    return root


def own_caches(torch, root, way):
    """Before a run of a way that compiles: inductor's in-memory caches
    (compiled Triton kernels, generated modules, FX graphs) cleared, and,
    with `root`, inductor's and Triton's caches on disk set to the way's own
    folders, as torch._inductor.utils.fresh_cache() does it (the compile
    workers get both variables with each task). The way's first round
    compiles cold, its later rounds warm from its own cache, and nothing
    another way compiled (the same kernels, under another mode) is found."""
    if root is not None:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, way, "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(root, way, "triton")
    try:
        from torch._inductor.utils import clear_caches
    except ImportError:  # older PyTorch
        from torch._inductor.utils import clear_inductor_caches as clear_caches
    clear_caches()


def pct(values, p):
    """The p-th percentile of `values`, nearest rank."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


class Bench:
    def __init__(self, a, torch, encore, serving, device="cuda", cache_root=None):
        self.a, self.torch, self.serving = a, torch, serving
        self.cache_root = cache_root  # where each compiling way's own caches go (None: --warm-cache, shared)
        model = serving.make_encoder(a.layers, a.hidden, device=device)
        self.ctx = types.SimpleNamespace(torch=torch, encore=encore, model=model, fn=serving.encode_fn(model),
                                         buckets=a.buckets, seq=serving.SEQ, warmups=a.warmups, device=device)
        self.batches = serving.zipf_batches(a.requests, top=a.max_batch, s=a.zipf, seed=a.seed)
        self.requests = serving.make_requests(self.batches, seed=a.seed + 1, device=device)
        g = torch.Generator(device=device).manual_seed(a.seed + 2)
        self.proj = torch.randn(a.hidden, 8, device=device, generator=g) / math.sqrt(a.hidden)
        self.failed, self.one_bucket = {}, {}
        with torch.no_grad():
            self.ref = [self.fingerprint(self.ctx.fn(x), x.shape[0]) for x in self.requests]

    def fingerprint(self, y, b):
        """A response as 8 values per token (float32, on the host), or None
        when it is not a tensor of [b, seq, hidden]."""
        torch = self.torch
        if not isinstance(y, torch.Tensor) or tuple(y.shape) != (b, self.ctx.seq, self.a.hidden):
            return None
        return (y.float() @ self.proj).cpu()

    def memory(self):
        """(allocated, reserved, device free) bytes, the allocator's cache emptied."""
        torch = self.torch
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        return torch.cuda.memory_allocated(), torch.cuda.memory_reserved(), torch.cuda.mem_get_info()[0]

    def held(self, before):
        after = self.memory()
        return {"alloc_mib": (after[0] - before[0]) / MiB, "reserved_mib": (after[1] - before[1]) / MiB,
                "device_mib": (before[2] - after[2]) / MiB}

    def serve(self, served):
        """The trace, back to back: each request's latency (ms) and response check."""
        torch, stream = self.torch, self.torch.cuda.current_stream()
        lat, errors, bitwise = [], [], 0
        for x, ref in zip(self.requests, self.ref):
            t0 = time.perf_counter()
            y = served(x)
            stream.synchronize()
            lat.append((time.perf_counter() - t0) * 1e3)
            fp = self.fingerprint(y, x.shape[0])
            errors.append(math.inf if fp is None else self.serving.row_error(fp, ref))
            bitwise += fp is not None and torch.equal(fp, ref)
        return {"lat": lat, "errors": errors, "bitwise": bitwise}

    def run_way(self, way):
        """One run of `way`: start-up, the trace, what it holds at the end."""
        torch = self.torch
        if way in COMPILING:
            own_caches(torch, self.cache_root, way)
        before = self.memory()
        w0 = time.perf_counter()
        with torch.no_grad():  # parameters require grad: encore would run every call eagerly (autograd)
            served = make(way, self.ctx)
            torch.cuda.current_stream().synchronize()
            startup = (time.perf_counter() - w0) * 1e3
            try:
                run = self.serve(served)
                served.finish()
                run.update(self.held(before))
                run.update(served.stats())
            finally:
                served.close()
        run["startup_ms"] = startup
        run["first_response_ms"] = startup + run["lat"][0]
        return run

    def probe(self, way):
        """Device memory (MiB) held by `way` with the largest bucket alone:
        the base that memory per extra bucket is measured from."""
        ctx = self.ctx
        self.ctx = types.SimpleNamespace(**dict(vars(ctx), buckets=(ctx.buckets[-1],)))
        try:
            before = self.memory()
            with self.torch.no_grad():
                served = make(way, self.ctx)
                served.finish()
                held = self.held(before)
                served.close()
            self.one_bucket[way] = held
        except Exception as e:  # noqa: BLE001 - reported; the rounds still run
            print(f"probe of {way} with one bucket FAILED: {type(e).__name__}: {e}", flush=True)
        finally:
            self.ctx = ctx
            gc.collect()

    def rounds(self):
        ways = [w for w in WAYS if w in self.a.ways]
        runs = {w: [] for w in ways}
        for r in range(self.a.rounds):
            for w in ways[r % len(ways):] + ways[:r % len(ways)]:
                if w in self.failed:
                    continue
                try:
                    runs[w].append(summarize(self.run_way(w), self.a.first))
                    x = runs[w][-1]
                    print(f"round {r + 1} {w}: first response {x['first_response_ms']:.1f} ms, p99 first "
                          f"{x['p99_first_ms']:.2f} ms, {x['rps_steady']:.0f} requests/s steady, "
                          f"{x['device_mib']:.0f} MiB held", flush=True)
                except Exception as e:  # noqa: BLE001 - the other ways still run
                    print(f"round {r + 1} {w} FAILED:", flush=True)
                    traceback.print_exc()
                    self.failed[w] = f"{type(e).__name__}: {str(e)[:300]}"
                    gc.collect()
        return runs


def summarize(run, first):
    """A run's numbers: latency percentiles, requests/s, padding, capture."""
    lat = run["lat"]
    early, steady = lat[:first], lat[first:]
    real, padded = run["real_rows"], run["padded_rows"]
    run.update(p50_first_ms=pct(early, 50), p99_first_ms=pct(early, 99), p50_all_ms=pct(lat, 50),
               p99_all_ms=pct(lat, 99), rps=len(lat) / (sum(lat) / 1e3),
               rps_steady=len(steady) / (sum(steady) / 1e3), worst_row_error=max(run["errors"]),
               padded_share=padded / (real + padded) if real + padded else 0.0)
    if run["capture_ms"]:
        run["capture_ms_per_bucket"] = sum(run["capture_ms"]) / len(run["capture_ms"])
    rep = run.get("report")
    if rep is not None:
        run["graph_memory_mib"] = rep.get("graph_memory_bytes", 0) / MiB
    return run


def main(argv=None):
    a = parse_args(argv)
    print("command: python3 " + " ".join(shlex.quote(x) for x in sys.argv), flush=True)
    root = None
    if not a.warm_cache:
        root = fresh_caches()
        print(f"inductor and Triton caches: {root} (new; a folder of its own for each way that compiles)",
              flush=True)
    import torch

    import encore
    import serving
    from bench_common import device_of
    for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):  # a recompile shows in its time, not as a fallback to eager
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 256)
    device, software = device_of(torch)
    res = Results("python_serving_bench", a.rounds, device, software)
    b = Bench(a, torch, encore, serving, cache_root=root)
    for way in ("hand", "encore_listed"):
        if way in a.ways:
            b.probe(way)
    runs = b.rounds()
    record(b, res, runs)
    report(b, res, runs)
    return res.finish(a.json, "python_serving_bench.json")


if __name__ == "__main__":
    sys.exit(main())
