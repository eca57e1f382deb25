# SPDX-License-Identifier: Apache-2.0
"""Rollouts between weight syncs, as an RL trainer's generator runs them:
transformers' LlamaForCausalLM (random weights, bf16, StaticCache, batch 1,
greedy) decodes a rollout of --tokens tokens, then takes new weights, --syncs
times. Each sync's weights are new random tensors of the same shapes and
dtypes (a fixed seed per sync, so every way gets the same weights), loaded
with `model.load_state_dict(sd, assign=True)` except where said. Ways
taking turns over at least 3 rounds, the order rotating round by round:

  hand_copy        a lean hand-written torch.cuda.graph, captured once; each
                   sync copies the new weights into the old storage
                   (`p.copy_(new)` per parameter, vLLM's way)
  encore_rebind    encore.method with the model and the cache listed as
                   constants, flags default: the parameters moved, so the
                   next call rebinds the graphs to the new storage
  encore_recapture the same, `m.release()` after every sync: the graphs
                   warm up and are captured again (encore before rebinding)

Per sync: the weights' load plus the first decode call, synced
(sync_to_first_token_ms; the prompt's eager prefill in between is the
same for every way and not counted), the same until the first call a graph
served (sync_to_first_replay_ms: with default warmups the recapturing
way's first tokens come from eager warmup calls), encore's captures and
rebinds, and the rollout's tokens against eager decoding with the same
weights. Then, on encore_rebind after its syncs: Manager.sleep() (the
bytes it reports, the device memory mem_get_info sees given back, against
report()["graph_memory_bytes"]), a prefill, Manager.wake() and the time
to the first replay, a rollout checked against eager, and the time
from m.release() to the first replay (capturing those graphs again).

Exits 1 if any token differs from eager's, or if an encore way did not run
as graphs by its path (bench_common.graphs_not_run: replays over the syncs,
graphs on, no capture failed; encore_rebind rebound, encore_recapture
captured after every sync, the sleep gave bytes back, as Manager.sleep()
and mem_get_info saw them, and the graphs replayed after the wake and after
the release), with a last line saying why; targets print PASS/MISS. The
JSON (--json, and python_rl_bench.json in $OUT / $RESULTS) is what
tools/perf_table.py reads.

  python3 bench/python_rl_bench.py [--layers 8] [--hidden 1024] [--tokens 64] [--syncs 20] [--rounds 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "python"))

import encore  # noqa: E402
from bench_common import MIN_ROUNDS, Results, cell, device_of, ratios  # noqa: E402
from llama_decode import Decoder, LeanHandGraph, cache_tensors, make_model  # noqa: E402

WAYS = ("hand_copy", "encore_rebind", "encore_recapture")
PER_SYNC = (("sync_to_first_token_ms", "ms"), ("sync_to_first_replay_ms", "ms"), ("load_ms", "ms"))
SLEEP = (("sleep_reported_mib", "MiB"), ("sleep_device_mib", "MiB"), ("graph_memory_mib", "MiB"),
         ("wake_to_first_replay_ms", "ms"), ("capture_again_ms", "ms"))
MiB = 2**20


def weights(model, seed):
    """New random tensors of the model's state dict's shapes and dtypes, the
    same for a seed: norms near 1, the rest small."""
    g = torch.Generator(device="cuda").manual_seed(1000 + seed)
    sd = {}
    for name, t in model.state_dict().items():
        r = torch.randn(t.shape, generator=g, device="cuda", dtype=torch.float32)
        sd[name] = (1 + 0.05 * r if t.dim() == 1 else 0.02 * r).to(t.dtype)
    return sd


def copy_into(model, sd):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(sd[name])


def assign(model, sd):
    model.load_state_dict(sd, assign=True)


def synced_ms(t0):
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


class Way:
    """One way's decode step over the decoder `d`: `first(...)` is the
    first call after a restart, `step(...)` the others; `replayed()` says
    whether a graph served the calls so far."""

    def __init__(self, way, d):
        self.way, self.d, self.m, self.g, self.mgr = way, d, None, None, None
        if way == "hand_copy":
            self.g = LeanHandGraph(d)
        else:
            self.mgr = encore.Manager()
            self.m = self.mgr.method(d.step, name="rl_decode_step",
                                     constants=[d.model, cache_tensors(d.cache)])

    def restart(self):
        self.d.restart()
        if self.g is not None:
            self.g.tok.copy_(self.d.first)
            self.g.pos.fill_(self.d.start)
        self.replays0 = self.report().get("replays", 0)

    def step(self, tok, i):
        p = self.d.start + i
        with torch.no_grad():
            return (self.g or self.m)(tok, self.d.positions[p:p + 1])

    def report(self):
        return self.m.report() if self.m is not None else {}

    def replayed(self):
        return self.g is not None or self.report()["replays"] > self.replays0


def rollout(w, tokens, t_load_ms):
    """A rollout after a restart: the tokens, the load plus the first call,
    the load plus the calls until the first a graph served (report reads
    between calls not counted)."""
    tok, out, first, to_replay = w.d.first, [], None, None
    spent = t_load_ms
    for i in range(tokens):
        t0 = time.perf_counter()
        tok = w.step(tok, i)
        out.append(tok)
        if to_replay is None:
            spent += synced_ms(t0)
            first = spent if first is None else first
            if w.replayed():
                to_replay = spent
    torch.cuda.synchronize()
    return torch.cat(out, dim=1).cpu(), first, float("nan") if to_replay is None else to_replay


def sync_once(w, model, sd, tokens):
    """One weight sync and the rollout after it."""
    rep0 = w.report()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    if w.way == "hand_copy":
        copy_into(model, sd)
    else:
        assign(model, sd)
        if w.way == "encore_recapture":
            w.m.release()
    load = synced_ms(t0)
    w.restart()
    toks, first, to_replay = rollout(w, tokens, load)
    rep = w.report()
    return {"tokens": toks, "sync_to_first_token_ms": first, "sync_to_first_replay_ms": to_replay,
            "load_ms": load, "recaptures": rep.get("captures", 0) - rep0.get("captures", 0),
            "rebinds": rep.get("rebinds", 0) - rep0.get("rebinds", 0)}


def sleep_and_wake(w, ref, tokens):
    """Sleep, wake and the first replay after it, a rollout checked against
    `ref`, then the time from a release to the first replay."""
    rep = w.report()
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    given = w.mgr.sleep()
    torch.cuda.synchronize()
    free1 = torch.cuda.mem_get_info()[0]
    asleep = w.mgr.asleep
    w.restart()
    t0 = time.perf_counter()
    w.mgr.wake()
    toks, _, wake_ms = rollout(w, tokens, synced_ms(t0))
    woke = w.report()
    w.m.release()
    w.restart()
    _, _, again_ms = rollout(w, tokens, 0.0)
    return {"sleep_reported_mib": given / MiB, "sleep_device_mib": (free1 - free0) / MiB,
            "graph_memory_mib": rep.get("graph_memory_bytes", 0) / MiB, "asleep": asleep,
            "wake_to_first_replay_ms": wake_ms, "capture_again_ms": again_ms,
            "wake_tokens_ok": torch.equal(toks, ref), "report_before_sleep": rep, "report_after_wake": woke,
            "report_after_again": w.report(), "given_bytes": given, "device_bytes": free1 - free0}


def run_way(way, model, a, refs):
    """The first rollout on sync 0's weights (the hand graph's capture, or
    encore's warmups and capture), then the syncs."""
    assign(model, weights(model, 0))
    d = Decoder(model, max_len=16 + a.tokens + 8)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    w = Way(way, d)
    w.restart()
    toks, _, setup_ms = rollout(w, a.tokens, synced_ms(t0))
    run = {"setup_ms": setup_ms, "wrong": [] if torch.equal(toks, refs[0]) else [0], "syncs": [],
           "report_setup": w.report()}
    for s in range(1, a.syncs + 1):
        x = sync_once(w, model, weights(model, s), a.tokens)
        if not torch.equal(x.pop("tokens"), refs[s]):
            run["wrong"].append(s)
        run["syncs"].append(x)
    run["report_syncs"] = w.report()
    if way == "encore_rebind":
        run["sleep"] = sleep_and_wake(w, refs[a.syncs], a.tokens)
    run["report"] = w.report()
    return run


def eager_refs(model, a):
    """Eager decoding after each sync's weights: the reference tokens."""
    refs = []
    for s in range(a.syncs + 1):
        assign(model, weights(model, s))
        d = Decoder(model, max_len=16 + a.tokens + 8)
        tok, out = d.first, []
        with torch.no_grad():
            for i in range(a.tokens):
                tok = d.step(tok, d.positions[d.start + i:d.start + i + 1])
                out.append(tok)
        refs.append(torch.cat(out, dim=1).cpu())
    return refs


def record(res, runs):
    """Per way and round: the median over the syncs; the sums of recaptures
    and rebinds; the sleep metrics; the per-round ratios."""
    med = {}
    for w in WAYS:
        for key, unit in PER_SYNC:
            med[w, key] = [statistics.median(x[key] for x in r["syncs"]) for r in runs[w]]
            res.metric(f"{w}.{key}", med[w, key], unit)
        res.metric(f"{w}.setup_ms", [r["setup_ms"] for r in runs[w]], "ms")
        for key in ("recaptures", "rebinds"):
            res.metric(f"{w}.{key}", [sum(x[key] for x in r["syncs"]) for r in runs[w]], "")
    for key, unit in SLEEP:
        res.metric(f"encore_rebind.{key}", [r["sleep"][key] for r in runs["encore_rebind"]], unit)
    for base in ("encore_recapture", "hand_copy"):
        for key in ("sync_to_first_token_ms", "sync_to_first_replay_ms"):
            res.metric(f"encore_rebind_vs_{base}.{key}", ratios(med["encore_rebind", key], med[base, key]), "x")
    sl = [r["sleep"] for r in runs["encore_rebind"]]
    res.metric("encore_rebind.wake_vs_capture_again", [x["wake_to_first_replay_ms"] / x["capture_again_ms"]
                                                       for x in sl], "x")
    res.metric("encore_rebind.sleep_device_vs_graph_memory",
               [x["sleep_device_mib"] / x["graph_memory_mib"] if x["graph_memory_mib"] else 0.0 for x in sl], "x")


def check(res, runs, a):
    """Tokens against eager's; that each encore way replayed over the syncs
    by its path (rebinding, or capturing again after every sync); that the
    sleep gave memory back and the graphs replayed after the wake, and
    after a release (the time a wake is compared with)."""
    for w in WAYS:
        bad = {r + 1: run["wrong"] for r, run in enumerate(runs[w]) if run["wrong"]}
        res.check(f"{w}: every rollout's tokens equal eager's with the same weights", not bad,
                  f"wrong syncs by round {bad}" if bad else f"{a.syncs + 1} rollouts x {len(runs[w])} rounds")
    for r, run in enumerate(runs["encore_rebind"]):
        s = run["sleep"]
        res.graphs("encore_rebind", run["report_syncs"], run["report_setup"], f"round {r + 1}",
                   "replayed over the syncs and rebound", need={"rebinds": 1})
        res.check(f"encore_rebind round {r + 1}: asleep after sleep(), tokens after wake equal eager's",
                  s["asleep"] and s["wake_tokens_ok"], f"asleep {s['asleep']}, tokens equal {s['wake_tokens_ok']}")
        res.graphs("encore_rebind", s["report_after_wake"], s["report_before_sleep"], f"round {r + 1}",
                   "sleep gave memory back, replayed after the wake",
                   slept={"Manager.sleep()": s["given_bytes"], "mem_get_info": s["device_bytes"]})
        res.graphs("encore_rebind", s["report_after_again"], s["report_after_wake"], f"round {r + 1}",
                   "replayed after a release (capture again)")
    for r, run in enumerate(runs["encore_recapture"]):
        res.graphs("encore_recapture", run["report_syncs"], run["report_setup"], f"round {r + 1}",
                   "replayed over the syncs, captured again after every sync", need={"captures": a.syncs})


def targets(res):
    """The targets, PASS or MISS; each a MISS while the rebind way's graphs
    did not run (its graphs check failed), whatever the numbers say."""
    m = res.doc["metrics"]
    rec, reb = m["encore_rebind.recaptures"]["max"], m["encore_rebind.rebinds"]["median"]
    wrong = sum(1 for c in res.doc["checks"]
                if not c["ok"] and c["name"].startswith("encore_rebind") and "tokens" in c["name"])
    mem = m["encore_rebind.sleep_device_vs_graph_memory"]["median"]
    rows = [
        ("0 wrong tokens and 0 recaptures over the syncs (rebind way)", wrong == 0 and rec == 0,
         f"recaptures max {rec:.0f}, rebinds median {reb:.0f}, failed token checks {wrong}"),
        ("a rebind <= 0.1x a recapture, sync to first replay", m[
            "encore_rebind_vs_encore_recapture.sync_to_first_replay_ms"]["median"] <= 0.1,
         f"x{cell(m['encore_rebind_vs_encore_recapture.sync_to_first_replay_ms'])} (to the first token: "
         f"x{cell(m['encore_rebind_vs_encore_recapture.sync_to_first_token_ms'])})"),
        ("wake to first replay <= 0.05x capturing again", m["encore_rebind.wake_vs_capture_again"]["median"] <= 0.05,
         f"x{cell(m['encore_rebind.wake_vs_capture_again'])}"),
        ("memory given back >= 90% of what the graphs hold", mem >= 0.9,
         f"x{mem:.3f}" + ("" if mem >= 0.9 else "; expected for a Python method: its intermediates live in "
                          "PyTorch's capture pool, which sleep does not give back (docs/limitations.md)")),
    ]
    ran = res.graphs_ran("encore_rebind")
    res.doc["info"]["targets"] = []
    for name, ok, detail in rows:
        ok, detail = ok and ran, detail + ("" if ran else f"; graphs did not run: {res.not_run['encore_rebind']}")
        print(f"{'PASS' if ok else 'MISS'}: {name} ({detail})")
        res.doc["info"]["targets"].append({"name": name, "pass": bool(ok), "detail": detail})


def print_table(a, res):
    m = res.doc["metrics"]
    print(f"LlamaForCausalLM {a.layers} layers x {a.hidden}, bf16, {a.tokens}-token rollouts, {a.syncs} syncs, "
          f"{a.rounds} rounds; torch {torch.__version__}; median [min-max] over the rounds of each round's "
          f"median over the syncs")
    keys = [k for k, _ in PER_SYNC] + ["setup_ms", "recaptures", "rebinds"]
    for w in WAYS:
        print(f"{w:17s} " + "  ".join(f"{k} {cell(m[f'{w}.{k}'], '.2f')}" for k in keys))
    for key in sorted(k for k in m if "_vs_" in k or k.startswith("encore_rebind.") and k[14:] in dict(SLEEP)):
        print(f"{key:58s} {cell(m[key])}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--syncs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(tempfile.gettempdir(), "python_rl_bench.json"))
    a = ap.parse_args()
    if a.rounds < MIN_ROUNDS or a.tokens < 8 or a.syncs < 1:
        ap.error(f"--rounds must be at least {MIN_ROUNDS}, --tokens at least 8, --syncs at least 1")
    device, software = device_of(torch)
    res = Results("python_rl_bench", a.rounds, device, software)
    model = make_model(a.layers, a.hidden)
    refs = eager_refs(model, a)
    runs = {w: [] for w in WAYS}
    for r in range(a.rounds):
        for w in WAYS[r % len(WAYS):] + WAYS[:r % len(WAYS)]:
            runs[w].append(run_way(w, model, a, refs))
    res.doc["info"]["model"] = {"layers": a.layers, "hidden": a.hidden, "tokens": a.tokens, "syncs": a.syncs}
    res.doc["info"]["encore_report"] = runs["encore_rebind"][-1]["report"]
    res.doc["info"]["report_before_sleep"] = runs["encore_rebind"][-1]["sleep"]["report_before_sleep"]
    record(res, runs)
    print_table(a, res)
    check(res, runs, a)
    targets(res)
    return res.finish(a.json, "python_rl_bench.json")


if __name__ == "__main__":
    sys.exit(main())
