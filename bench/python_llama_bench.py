# SPDX-License-Identifier: Apache-2.0
"""Greedy decoding of transformers' LlamaForCausalLM (random weights, bf16,
StaticCache, batch 1, each step fed the previous step's token), ways taking
turns in one run: eager, a hand-written torch.cuda.graph (copy_ in, clone()
out), and encore around the step as written (examples/python/llama_decode.py).

Per way and round, on a fresh cache (and a fresh graph or method): the wall
time until the 4th token is on the host side of a sync (warmups and capture
included), then ms per token and this thread's CPU per step over the other
steps, the PyTorch allocator's peak and the device memory in use at the end
beyond the start. Medians over rounds; tokens must equal eager's.

  python3 bench/python_llama_bench.py [--layers 8] [--hidden 1024] [--steps 128] [--rounds 3]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "python"))

import encore  # noqa: E402
from bench_common import timed_decode  # noqa: E402
from llama_decode import Decoder, HandGraph, encore_method, make_model  # noqa: E402


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
    elif way == "hand_graph":
        fn = HandGraph(d)
    else:
        fn = encore_method(d, manager=encore.Manager(flags=""))
    run = timed_decode(torch, fn, d, steps, w0)
    free1 = torch.cuda.mem_get_info()[0]
    return {
        **run,
        "peak_alloc_mib": (torch.cuda.max_memory_allocated() - base_alloc) / 2**20,
        "device_used_mib": (free0 - free1) / 2**20,
        "report": fn.report() if hasattr(fn, "report") else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    model = make_model(a.layers, a.hidden)
    max_len = 16 + a.steps + 8
    ways = ["eager", "hand_graph", "encore"]
    res = {w: [] for w in ways}
    for r in range(a.rounds):
        for w in ways[r % 3:] + ways[:r % 3]:
            res[w].append(run_way(w, model, a.steps, max_len))
    ref = res["eager"][0]["tokens"]
    print(f"LlamaForCausalLM {a.layers} layers x {a.hidden}, bf16, {a.steps} steps, {a.rounds} rounds; "
          f"torch {torch.__version__}")
    cols = ("first4_ms", "ms_per_token", "cpu_us_per_step", "peak_alloc_mib", "device_used_mib")
    print(f"{'way':11s} " + " ".join(f"{c:>16s}" for c in cols) + "  tokens==eager")
    for w in ways:
        row = " ".join(f"{statistics.median(x[c] for x in res[w]):16.3f}" for c in cols)
        same = all(torch.equal(x["tokens"], ref) for x in res[w])
        print(f"{w:11s} {row}  {same}")
    rep = res["encore"][-1]["report"]
    print(f"encore: binding={rep['binding']} ({rep['binding_reason']}) captures={rep['captures']} "
          f"replays={rep['replays']} eager_calls={rep['eager_calls']} graph_nodes={rep['graph_nodes']} "
          f"last_capture_us={rep['last_capture_us']}")
    for w in ("hand_graph", "encore"):
        print(f"{w} vs hand_graph: ms/token x{statistics.median(x['ms_per_token'] for x in res[w]) / statistics.median(x['ms_per_token'] for x in res['hand_graph']):.3f}")


if __name__ == "__main__":
    main()
