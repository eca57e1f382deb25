# SPDX-License-Identifier: Apache-2.0
"""Tokens per second of greedy Llama decoding when every token is checked
for an end token, ways taking turns in one run (the order rotates round by
round), at two sizes:

  eager          one eager step per token, the check read on the host: the
                 reference
  hand_lean      one replay per token of a hand-written torch.cuda.graph
                 that feeds itself (its token into its own input buffer,
                 one clone() per token), same check
  hand_copy      one replay per token of a hand-written torch.cuda.graph
                 with copy_ in and clone() out, same check
  encore_step    one encore call per token, same check
  encore_loopN   encore.while_loop generating up to N tokens per call, the
                 check on the device, one host read per call

The end token here never comes (-1), so every way decodes --tokens tokens.
Each run first decodes a few tokens (warmups, capture) and then puts the
cache (and a hand graph's own buffers) back as they were after the prompt,
so the timed decode starts from the prompt again. Reports tokens/s, this
thread's CPU per token and host reads per token (each read of a device
value on the host, counted where it is made): median, min and max over the
rounds. Every run's tokens must equal eager's first run's, and every
encore way must have replayed over the timed decode with no eager call
(bench_common.graphs_not_run): otherwise the run exits 1, saying why in its
last line. The JSON (--json, and python_loop_bench.json in $OUT /
$RESULTS) is what tools/perf_table.py reads.

  python3 bench/python_loop_bench.py [--tokens 128] [--rounds 3]
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
from bench_common import MIN_ROUNDS, Results, cell, device_of, ratios  # noqa: E402
from llama_decode import (Decoder, HandGraph, LeanHandGraph, SavedTensors, cache_state,  # noqa: E402
                          encore_method, make_model)
from llama_loop_decode import LoopDecoder  # noqa: E402

WAYS = ("eager", "hand_lean", "hand_copy", "encore_step", "encore_loop16", "encore_loop64")
SIZES = ((2, 512), (8, 1024))
METRICS = (("tokens_per_s", "tokens/s"), ("cpu_us_per_token", "us"), ("host_reads_per_token", "reads"))
EOS = -1


def per_token(d, fn, total):
    """`total` tokens, one call per token, each checked on the host: the
    tokens and the host reads made."""
    tok, out, reads = d.first, [], 0
    with torch.no_grad():
        for i in range(total):
            p = d.start + i
            tok = fn(tok, d.positions[p:p + 1])
            out.append(tok)
            reads += 1
            if int(tok) == EOS:  # the host check: one read per token
                break
    return torch.cat(out, dim=1), reads


def make_way(name, model, max_len):
    """The decoder, the way's callable and the buffers it keeps between calls."""
    d = Decoder(model, max_len=max_len)
    if name == "eager":
        return d, d.step, []
    if name in ("hand_lean", "hand_copy"):
        g = LeanHandGraph(d) if name == "hand_lean" else HandGraph(d)
        return d, g, [g.tok, g.pos]
    if name == "encore_step":
        return d, encore_method(d, manager=encore.Manager(flags="")), []
    chunk = int(name[len("encore_loop"):])
    return d, LoopDecoder(d, chunk, eos=EOS, manager=encore.Manager(flags="")), []


def decode(fn, d, total):
    if isinstance(fn, LoopDecoder):
        before = fn.host_reads
        toks, _ = fn.decode(total)
        return toks, fn.host_reads - before
    return per_token(d, fn, total)


def run_way(name, model, total, max_len):
    d, fn, buffers = make_way(name, model, max_len)
    saved = SavedTensors(cache_state(d.cache) + buffers)
    report = fn.method.report if isinstance(fn, LoopDecoder) else getattr(fn, "report", lambda: None)
    # Warm up (and capture) on a short decode, then start again from the prompt.
    decode(fn, d, 2 * fn.chunk + 1 if isinstance(fn, LoopDecoder) else 4)
    saved.restore()
    torch.cuda.synchronize()
    timed_from = report()
    w0, c0 = time.perf_counter(), time.thread_time()
    toks, reads = decode(fn, d, total)
    c1 = time.thread_time()
    torch.cuda.synchronize()
    w1 = time.perf_counter()
    return {"tokens_per_s": total / (w1 - w0), "cpu_us_per_token": (c1 - c0) / total * 1e6,
            "host_reads_per_token": reads / total, "tokens": toks.flatten().cpu(), "report": report(),
            "timed_from": timed_from}


def check(res, size, runs, total):
    ref = runs["eager"][0]["tokens"]
    for w in WAYS:
        bad = [r + 1 for r, x in enumerate(runs[w]) if not torch.equal(x["tokens"], ref)]
        res.check(f"{size} {w}: tokens equal eager's in every round", not bad and ref.numel() == total,
                  f"rounds {bad} differ" if bad else f"{ref.numel()} tokens x {len(runs[w])}")
    for w in (x for x in WAYS if x.startswith("encore")):
        for r, x in enumerate(runs[w]):
            res.graphs(f"{size} {w}", x["report"], x["timed_from"], f"round {r + 1}", "replayed, no eager call",
                       max_eager=0)


def run_size(res, a, layers, hidden):
    size = f"{layers}x{hidden}"
    model = make_model(layers, hidden)
    # A loop call may decode up to 64 tokens past the last one kept; the warmup decodes 3 calls.
    max_len = 16 + max(a.tokens + 64, 3 * 64) + 8
    runs = {w: [] for w in WAYS}
    for r in range(a.rounds):
        for w in WAYS[r % len(WAYS):] + WAYS[:r % len(WAYS)]:
            runs[w].append(run_way(w, model, a.tokens, max_len))
    for w in WAYS:
        for key, unit in METRICS:
            res.metric(f"{size}.{w}.{key}", [x[key] for x in runs[w]], unit)
    for w in ("encore_step", "encore_loop16", "encore_loop64"):
        res.metric(f"{size}.{w}_vs_hand_lean.tokens_per_s",
                   ratios([x["tokens_per_s"] for x in runs[w]], [x["tokens_per_s"] for x in runs["hand_lean"]]), "x")
    m = res.doc["metrics"]
    print(f"LlamaForCausalLM {size}, bf16, {a.tokens} tokens, end token checked per token; "
          f"median [min-max] over {a.rounds} rounds")
    print(f"{'way':14s} " + " ".join(f"{k:>30s}" for k, _ in METRICS))
    for w in WAYS:
        print(f"{w:14s} " + " ".join(f"{cell(m[f'{size}.{w}.{k}']):>30s}" for k, _ in METRICS))
    for w in ("encore_step", "encore_loop16", "encore_loop64"):
        print(f"{w} / hand_lean tokens/s: x{cell(m[f'{size}.{w}_vs_hand_lean.tokens_per_s'])}")
    check(res, size, runs, a.tokens)
    del model
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(tempfile.gettempdir(), "python_loop_bench.json"))
    a = ap.parse_args()
    if a.rounds < MIN_ROUNDS or a.tokens < 8:
        ap.error(f"--rounds must be at least {MIN_ROUNDS} and --tokens at least 8")
    device, software = device_of(torch)
    res = Results("python_loop_bench", a.rounds, device, software)
    for layers, hidden in SIZES:
        run_size(res, a, layers, hidden)
    return res.finish(a.json, "python_loop_bench.json")


if __name__ == "__main__":
    sys.exit(main())
