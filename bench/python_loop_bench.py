# SPDX-License-Identifier: Apache-2.0
"""Tokens per second of greedy Llama decoding when every token is checked
for an end token, ways taking turns in one run, at two sizes:

  eager          one eager step per token, the check read on the host
  hand_graph     one hand-written torch.cuda.graph replay per token, same check
  encore_step    one encore call per token, same check
  encore_loopN   encore.while_loop generating up to N tokens per call, the
                 check on the device, one host read per call

The end token here never comes (-1), so every way decodes --tokens tokens.
Reports tokens/s, this thread's CPU per token and host syncs per token
(medians over rounds).

  python3 bench/python_loop_bench.py [--tokens 128] [--rounds 3]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "python"))

import encore  # noqa: E402
from llama_decode import Decoder, HandGraph, encore_method, make_model  # noqa: E402
from llama_loop_decode import LoopDecoder  # noqa: E402


def per_token(d, fn, total):
    eos = -1
    tok, syncs = d.first, 0
    with torch.no_grad():
        for i in range(total):
            p = d.start + i
            tok = fn(tok, d.positions[p:p + 1])
            syncs += 1
            if int(tok) == eos:  # the host check: one sync per token
                break
    return syncs


def make_way(name, model, max_len):
    d = Decoder(model, max_len=max_len)
    if name == "eager":
        return d, d.step
    if name == "hand_graph":
        return d, HandGraph(d)
    if name == "encore_step":
        return d, encore_method(d, manager=encore.Manager(flags=""))
    chunk = int(name[len("encore_loop"):])
    return d, LoopDecoder(d, chunk, eos=-1, manager=encore.Manager(flags=""))


def run_way(name, model, total, max_len):
    d, fn = make_way(name, model, max_len)
    # Warm up (and capture) on a short run first, on the same cache positions.
    if isinstance(fn, LoopDecoder):
        fn.decode(2 * fn.chunk + 1)
    else:
        per_token(d, fn, 4)
    torch.cuda.synchronize()
    w0, c0 = time.perf_counter(), time.thread_time()
    if isinstance(fn, LoopDecoder):
        _, syncs = fn.decode(total)
    else:
        syncs = per_token(d, fn, total)
    c1 = time.thread_time()
    torch.cuda.synchronize()
    w1 = time.perf_counter()
    return {"tokens_per_s": total / (w1 - w0), "cpu_us_per_token": (c1 - c0) / total * 1e6,
            "syncs_per_token": syncs / total}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ways = ["eager", "hand_graph", "encore_step", "encore_loop16", "encore_loop64"]
    for layers, hidden in ((2, 512), (8, 1024)):
        model = make_model(layers, hidden)
        max_len = 16 + 2 * a.tokens + 160
        res = {w: [] for w in ways}
        for r in range(a.rounds):
            for w in ways[r % len(ways):] + ways[:r % len(ways)]:
                res[w].append(run_way(w, model, a.tokens, max_len))
        print(f"LlamaForCausalLM {layers} layers x {hidden}, bf16, {a.tokens} tokens, end token checked per token")
        print(f"{'way':14s} {'tokens/s':>10s} {'cpu us/token':>13s} {'syncs/token':>12s}")
        for w in ways:
            med = {k: statistics.median(x[k] for x in res[w]) for k in res[w][0]}
            print(f"{w:14s} {med['tokens_per_s']:10.1f} {med['cpu_us_per_token']:13.2f} {med['syncs_per_token']:12.3f}")
        step = statistics.median(x["tokens_per_s"] for x in res["encore_step"])
        for w in ("encore_loop16", "encore_loop64"):
            print(f"{w} / encore_step tokens/s: x{statistics.median(x['tokens_per_s'] for x in res[w]) / step:.2f}")
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
