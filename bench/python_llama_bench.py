# SPDX-License-Identifier: Apache-2.0
"""Greedy decoding of transformers' LlamaForCausalLM (random weights, bf16,
StaticCache, batch 1, each step fed the previous step's token), ways taking
turns in one run (the order rotates round by round):

  eager       the step called eagerly: the reference
  hand_lean   a hand-written torch.cuda.graph that feeds itself: the graph
              writes its token into its own input buffer and advances its
              position, one clone() of the token per step (what a competent
              user writes; examples/python/llama_decode.py LeanHandGraph)
  hand_copy   a hand-written torch.cuda.graph with copy_ in and clone() out
              on every step (HandGraph)
  encore      encore around the step as written, model and cache listed

Per way and round, on a fresh cache (and a fresh graph or method): the wall
time until the 4th token is on the host side of a sync (warmups and capture
included), then ms per token and this thread's CPU per step over the other
steps, the PyTorch allocator's peak and the device memory in use at the end
beyond the start. Each metric's median, min and max over the rounds, and
encore's ratios to the hand graphs per round (the two ran in the same
round). Every run's tokens must equal eager's first run's, and encore's
method must have replayed every timed step with no eager call
(bench_common.graphs_not_run): otherwise the run exits 1, saying why in
its last line. The JSON
(--json, and python_llama_bench.json in $OUT / $RESULTS) is what
tools/perf_table.py reads.

  python3 bench/python_llama_bench.py [--layers 8] [--hidden 1024] [--steps 128] [--rounds 3]
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "python"))

import encore  # noqa: E402
from bench_common import MIN_ROUNDS, Results, cell, device_of, ratios, timed_decode  # noqa: E402
from llama_decode import Decoder, HandGraph, LeanHandGraph, encore_method, make_model  # noqa: E402

WAYS = ("eager", "hand_lean", "hand_copy", "encore")
METRICS = (("first4_ms", "ms"), ("ms_per_token", "ms"), ("cpu_us_per_step", "us"), ("peak_alloc_mib", "MiB"),
           ("device_used_mib", "MiB"))


def run_way(way, model, steps, max_len):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base_alloc = torch.cuda.memory_allocated()
    free0 = torch.cuda.mem_get_info()[0]
    d = Decoder(model, max_len=max_len)
    torch.cuda.synchronize()
    w0 = time.perf_counter()
    if way == "eager":
        fn = d.step
    elif way == "hand_lean":
        fn = LeanHandGraph(d)
    elif way == "hand_copy":
        fn = HandGraph(d)
    else:
        fn = encore_method(d, manager=encore.Manager(flags=""))
    run = timed_decode(torch, fn, d, steps, w0, report=getattr(fn, "report", None))
    free1 = torch.cuda.mem_get_info()[0]
    return {
        **run,
        "peak_alloc_mib": (torch.cuda.max_memory_allocated() - base_alloc) / 2**20,
        "device_used_mib": (free0 - free1) / 2**20,
    }


def check(res, runs, steps):
    """The result checks: every run's tokens equal eager's first run's;
    encore's method replayed over the timed steps, with no eager call."""
    ref = runs["eager"][0]["tokens"]
    for w in WAYS:
        bad = [r + 1 for r, x in enumerate(runs[w]) if not torch.equal(x["tokens"], ref)]
        first = None
        if bad:
            t = runs[w][bad[0] - 1]["tokens"]
            first = int((t != ref).flatten().nonzero()[0]) if t.shape == ref.shape else "shape"
        res.check(f"{w}: tokens equal eager's in every round", not bad,
                  f"rounds {bad} differ, the first from step {first}" if bad else f"{steps} tokens x {len(runs[w])}")
    for r, x in enumerate(runs["encore"]):
        res.graphs("encore", x["report"], x["timed_from"], f"round {r + 1}", "replayed every timed step, no eager call",
                   need={"replays": steps - 4}, max_eager=0)


def record(res, runs):
    for w in WAYS:
        for key, unit in METRICS:
            res.metric(f"{w}.{key}", [x[key] for x in runs[w]], unit)
    for base in ("hand_lean", "hand_copy", "eager"):
        for key in ("ms_per_token", "cpu_us_per_step"):
            res.metric(f"encore_vs_{base}.{key}", ratios([x[key] for x in runs["encore"]],
                                                           [x[key] for x in runs[base]]), "x")
    for key in ("ms_per_token", "cpu_us_per_step"):
        res.metric(f"hand_lean_vs_hand_copy.{key}", ratios([x[key] for x in runs["hand_lean"]],
                                                            [x[key] for x in runs["hand_copy"]]), "x")


def print_table(a, res):
    m = res.doc["metrics"]
    print(f"LlamaForCausalLM {a.layers} layers x {a.hidden}, bf16, {a.steps} steps, {a.rounds} rounds; "
          f"torch {torch.__version__}; median [min-max] over the rounds")
    print(f"{'way':10s} " + " ".join(f"{k:>26s}" for k, _ in METRICS))
    for w in WAYS:
        print(f"{w:10s} " + " ".join(f"{cell(m[f'{w}.{k}']):>26s}" for k, _ in METRICS))
    for key in sorted(k for k in m if "_vs_" in k):
        print(f"{key:40s} x{cell(m[key])}")
    rep = res.doc["info"]["encore_report"]
    print(f"encore (last round): binding={rep['binding']} ({rep['binding_reason']}) captures={rep['captures']} "
          f"replays={rep['replays']} eager_calls={rep['eager_calls']} graph_nodes={rep['graph_nodes']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(tempfile.gettempdir(), "python_llama_bench.json"))
    a = ap.parse_args()
    if a.rounds < MIN_ROUNDS or a.steps < 8:
        ap.error(f"--rounds must be at least {MIN_ROUNDS} and --steps at least 8")
    device, software = device_of(torch)
    res = Results("python_llama_bench", a.rounds, device, software)
    model = make_model(a.layers, a.hidden)
    max_len = 16 + a.steps + 8
    runs = {w: [] for w in WAYS}
    for r in range(a.rounds):
        for w in WAYS[r % len(WAYS):] + WAYS[:r % len(WAYS)]:
            runs[w].append(run_way(w, model, a.steps, max_len))
    res.doc["info"]["encore_report"] = runs["encore"][-1]["report"]
    res.doc["info"]["model"] = {"layers": a.layers, "hidden": a.hidden, "steps": a.steps}
    record(res, runs)
    print_table(a, res)
    check(res, runs, a.steps)
    return res.finish(a.json, "python_llama_bench.json")


if __name__ == "__main__":
    sys.exit(main())
