# SPDX-License-Identifier: Apache-2.0
"""Greedy decoding of transformers' LlamaForCausalLM (random weights, bf16,
StaticCache, batch 1, each step fed the previous step's token; the decoder
of examples/python/llama_decode.py) under torch.compile, ways taking turns
in one run:

  compiled         torch.compile(step) with PyTorch's graphs off (--inner-mode:
                   default, or max-autotune-no-cudagraphs), called directly:
                   the slow reference
  reduce_overhead  torch.compile(step, mode="reduce-overhead"): PyTorch's own
                   cudagraph trees; torch.compiler.cudagraph_mark_step_begin()
                   before each step and the token clone()d, as a user who
                   keeps the tokens must (the next replay overwrites it)
  hand_lean        a hand-written torch.cuda.graph around the compiled step
                   that feeds itself (it writes its token into its own input
                   buffer and advances its position; one clone() per step):
                   what a competent user writes
  hand_copy        a hand-written torch.cuda.graph around the compiled step
                   (static buffers, copy_ in, clone() out)
  encore           encore.method around the compiled step, model and cache
                   listed as constants; the position view that moves every
                   step is bound where it lies when the binding is direct
                   (the report line says), where reduce-overhead copies it

The order of the ways rotates round by round. Every run (one way in one
round) starts from dynamo reset and its counters cleared, a fresh decoder
(a new StaticCache, the prompt prefilled eagerly) and its step compiled
afresh (the recompile limits raised, so a recompile inside a run shows in
its time rather than hiding as a fallback to eager). All runs share one
process, as an application's would: encore must not make a compiled
function beside it recompile (an earlier encore did, through a global
module hook, and every compiled run after an encore run recompiled on
every token); each run's dynamo counts are in the JSON.
--process-per-run gives each run a process of its own instead. The
inductor and Triton caches are shared by the runs and fresh
unless --warm-cache, so round 1 pays a cold compile and later rounds a
warm one. The time to the end of the first call in round 1 is printed per
way. Per way and round: the wall time until the 4th token is on
the host side of a sync (compiling, warmups, capture or recording
included), then ms per token and this thread's CPU per step over the other
steps. Each metric's median, min and max over the rounds (at least 3), and
encore's ratios to the other graphs per round. Every run's tokens must
equal the compiled way's first run's (fused kernels round differently from
eager; eager's are compared for information only), every way must finish
every round and encore's method must have replayed every timed step with
no eager call (bench_common.graphs_not_run): otherwise the run exits 1,
saying why in its last line. The JSON (--json, and python_compile_bench.json in $OUT /
$RESULTS) is what tools/perf_table.py reads.

  python3 bench/python_compile_bench.py [--rounds 3] [--steps 128] [--inner-mode default] [--process-per-run]
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "python"))

from bench_common import MIN_ROUNDS, Results, cell, device_of, ratios, timed_decode  # noqa: E402

WAYS = ("compiled", "reduce_overhead", "hand_lean", "hand_copy", "encore")
METRICS = (("ms_per_token", "ms"), ("cpu_us_per_step", "us"), ("first4_ms", "ms"))
RESULT = "RUN_RESULT "  # the line a child prints its run on


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inner-mode", default="default", choices=("default", "max-autotune-no-cudagraphs"),
                    help="torch.compile mode of the step the compiled, hand_lean, hand_copy and encore ways call")
    ap.add_argument("--ways", default=",".join(WAYS), help="comma-separated subset of " + ",".join(WAYS))
    ap.add_argument("--warm-cache", action="store_true",
                    help="keep the inductor and Triton cache directories already set (compile times then "
                         "depend on earlier runs)")
    ap.add_argument("--process-per-run", action="store_true",
                    help="each run in a Python process of its own (default: every run in this one)")
    ap.add_argument("--json", default=os.path.join(tempfile.gettempdir(), "python_compile_bench.json"))
    ap.add_argument("--run", choices=WAYS, help=argparse.SUPPRESS)  # a child: one run of this way
    ap.add_argument("--first-call", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.ways = [w for w in a.ways.split(",") if w]
    unknown = [w for w in a.ways if w not in WAYS]
    if unknown or a.steps < 8 or a.rounds < MIN_ROUNDS or "compiled" not in a.ways:
        ap.error(f"--ways {unknown} not among {list(WAYS)} or without compiled (the reference), or --steps "
                 f"{a.steps} < 8, or --rounds {a.rounds} < {MIN_ROUNDS}")
    return a


def fresh_caches():
    """Inductor's and Triton's caches in a new directory, set before torch
    is imported, so compile times do not depend on earlier runs."""
    root = tempfile.mkdtemp(prefix="encore_compile_bench_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "triton")
    return root


def dynamo_counts(torch):
    """What dynamo and inductor counted: graphs compiled, frames, graph
    breaks, cudagraph skips (reduce-overhead falling back to no graphs)."""
    try:
        from torch._dynamo.utils import counters
        out = {"unique_graphs": counters["stats"].get("unique_graphs", 0),
               "frames_ok": counters["frames"].get("ok", 0),
               "frames_total": counters["frames"].get("total", 0),
               "graph_breaks": sum(counters["graph_break"].values())}
        out.update({k: v for k, v in counters["inductor"].items() if "cudagraph" in k})
        return out
    except Exception as e:  # noqa: BLE001 - private counters: informative only
        return {"error": f"{type(e).__name__}: {e}"}


class Bench:
    def __init__(self, a, torch, encore, ld):
        self.a, self.torch, self.encore, self.ld = a, torch, encore, ld
        self.model = ld.make_model(a.layers, a.hidden)
        self.max_len = 16 + a.steps + 8
        self.compile_s = {}    # way -> its first call in round 1 (dynamo, inductor, and its graphs)
        self.failed = {}       # way -> the error that stopped it
        self.reports = {}
        self.dynamo = {}       # way -> what dynamo counted in each of its runs
        # Raised, so that a recompile within a run shows in its time rather
        # than hiding as a fallback to eager.
        for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, 256)

    # -------------------------------------------------------------- ways ----
    def make_way(self, way, d):
        """The per-step callable of `way` over decoder `d`."""
        torch = self.torch
        if way == "reduce_overhead":
            ro = torch.compile(d.step, mode="reduce-overhead")
            mark = torch.compiler.cudagraph_mark_step_begin

            def reduce_overhead_step(token, position):
                mark()
                return ro(token, position).clone()

            return reduce_overhead_step
        inner = torch.compile(d.step, mode=None if self.a.inner_mode == "default" else self.a.inner_mode)
        if way == "compiled":
            return inner
        if way == "hand_lean":
            return self.ld.LeanHandGraph(d, step=inner)
        if way == "hand_copy":
            return self.ld.HandGraph(d, step=inner)
        return self.ld.encore_method(d, manager=self.encore.Manager(flags=""), step=inner)

    def run_way(self, way, first_call):
        """One run of `way` in this process: dynamo reset and its counters
        cleared first, so the run compiles afresh and counts its own."""
        torch, steps = self.torch, self.a.steps
        torch._dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
        d = self.ld.Decoder(self.model, max_len=self.max_len)
        torch.cuda.synchronize()
        w0 = time.perf_counter()
        fn = self.make_way(way, d)
        run = timed_decode(torch, fn, d, steps, w0, first_call=first_call,
                           report=fn.report if way == "encore" else None)
        run["tokens"] = run["tokens"].flatten().tolist()
        run["dynamo"] = dynamo_counts(torch)
        return run

    def one_run(self, way):
        """One run of `way`, in this process or a child's; its result, tokens
        as a tensor."""
        if not self.a.process_per_run:
            run = json.loads(json.dumps(self.run_way(way, way not in self.compile_s), default=str))
        else:
            run = self.spawn(way)
        run["tokens"] = self.torch.tensor(run["tokens"])
        if run["first_ms"] is not None:
            self.compile_s[way] = run["first_ms"] / 1e3
        self.dynamo.setdefault(way, []).append(run.pop("dynamo"))
        if run["report"] is not None:
            self.reports[way] = run["report"]
        return run

    def spawn(self, way):
        """One run of `way` in a child process: its result as the child printed it."""
        a = self.a
        cmd = [sys.executable, str(Path(__file__).resolve()), "--run", way, "--layers", str(a.layers),
               "--hidden", str(a.hidden), "--steps", str(a.steps), "--inner-mode", a.inner_mode]
        if way not in self.compile_s:
            cmd.append("--first-call")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
        lines = [x for x in p.stdout.splitlines() if x.startswith(RESULT)]
        if p.returncode != 0 or not lines:
            raise RuntimeError(f"the run's process exited with {p.returncode} and no result "
                               f"(its last output: {p.stdout[-300:]!r})")
        return json.loads(lines[-1][len(RESULT):])

    def eager_tokens(self):
        """Eager decoding's tokens, untimed, for the tokens==eager column."""
        torch = self.torch
        try:
            d = self.ld.Decoder(self.model, max_len=self.max_len)
            tok, out = d.first, []
            with torch.no_grad():
                for i in range(self.a.steps):
                    p = d.start + i
                    tok = d.step(tok, d.positions[p:p + 1])
                    out.append(tok)
            return torch.cat(out, dim=1).flatten().cpu()
        except Exception:  # noqa: BLE001 - informative only
            print("eager decoding FAILED:", flush=True)
            traceback.print_exc()
            return None

    def rounds(self):
        ways = [w for w in WAYS if w in self.a.ways]
        res = {w: [] for w in ways}
        for r in range(self.a.rounds):
            for w in ways[r % len(ways):] + ways[:r % len(ways)]:
                if w in self.failed:
                    continue
                try:
                    res[w].append(self.one_run(w))
                    x = res[w][-1]
                    print(f"round {r + 1} {w}: {x['ms_per_token']:.3f} ms/token, {x['cpu_us_per_step']:.1f} us "
                          f"CPU/step, first 4 tokens {x['first4_ms']:.1f} ms", flush=True)
                except Exception as e:  # noqa: BLE001 - the other ways still run
                    print(f"round {r + 1} {w} FAILED:", flush=True)
                    traceback.print_exc()
                    self.failed[w] = f"{type(e).__name__}: {str(e)[:200]}"
        return res


def record(b, res, runs, eager):
    """Metrics (median, min, max over the rounds), per-round ratios and the
    result checks into `res`."""
    torch = b.torch
    ref = runs["compiled"][0]["tokens"] if runs.get("compiled") else None
    for w, xs in runs.items():
        res.check(f"{w}: ran all {b.a.rounds} rounds", len(xs) == b.a.rounds and w not in b.failed,
                  b.failed.get(w, f"{len(xs)} rounds"))
        if not xs:
            continue
        for key, unit in METRICS:
            res.metric(f"{w}.{key}", [x[key] for x in xs], unit)
        bad = [r + 1 for r, x in enumerate(xs) if ref is None or not torch.equal(x["tokens"], ref)]
        res.check(f"{w}: tokens equal the compiled way's in every round", not bad,
                  f"rounds {bad} differ" if bad else f"{b.a.steps} tokens x {len(xs)}")
        graphs = [c.get("unique_graphs") for c in b.dynamo.get(w, [])]
        if w != "encore" and graphs:  # every run compiles as often as the first, whatever ran before it
            res.check(f"{w}: dynamo compiled as many graphs in every round", len(set(graphs)) == 1,
                      f"unique_graphs per round: {graphs}")
        res.doc["info"].setdefault("tokens_equal_eager", {})[w] = (
            None if eager is None else all(torch.equal(x["tokens"], eager) for x in xs))
    full = [w for w, xs in runs.items() if len(xs) == b.a.rounds]
    for base in ("reduce_overhead", "hand_lean", "hand_copy"):
        if "encore" in full and base in full:
            for key in ("ms_per_token", "cpu_us_per_step"):
                res.metric(f"encore_vs_{base}.{key}", ratios([x[key] for x in runs["encore"]],
                                                               [x[key] for x in runs[base]]), "x")
    for r, x in enumerate(runs.get("encore", [])):
        res.graphs("encore", x["report"], x["timed_from"], f"round {r + 1}", "replayed every timed step, no eager call",
                   need={"replays": b.a.steps - 4}, max_eager=0)


def print_table(a, torch, res, compile_s):
    m = res.doc["metrics"]
    print(f"LlamaForCausalLM {a.layers} layers x {a.hidden}, bf16, StaticCache, {a.steps} steps, {a.rounds} rounds; "
          f"torch {torch.__version__}; inner mode {a.inner_mode}; median [min-max] over the rounds")
    print("first call of round 1 (compiling, warmups, graphs): "
          + ", ".join(f"{k} {v:.1f} s" for k, v in compile_s.items()))
    print(f"{'way':16s} " + " ".join(f"{k:>28s}" for k, _ in METRICS))
    for w in WAYS:
        if f"{w}.ms_per_token" in m:
            print(f"{w:16s} " + " ".join(f"{cell(m[f'{w}.{k}']):>28s}" for k, _ in METRICS))
    for key in sorted(k for k in m if "_vs_" in k):
        print(f"{key:40s} x{cell(m[key])}")
    print(f"tokens equal eager's (information: fused kernels round differently): "
          f"{res.doc['info'].get('tokens_equal_eager')}")


def print_targets(res):
    m = res.doc["metrics"]
    if "encore_vs_reduce_overhead.ms_per_token" not in m:
        print("targets: not measured (encore or reduce_overhead has no full set of rounds)")
        return
    ms, cpu = m["encore_vs_reduce_overhead.ms_per_token"], m["encore_vs_reduce_overhead.cpu_us_per_step"]
    ran = res.graphs_ran("encore")
    off = "" if ran else f" (graphs did not run: {res.not_run['encore']})"
    print(f"{'PASS' if ran and ms['max'] <= 1.02 else 'MISS'} encore ms/token within 2% of reduce-overhead's in "
          f"every round: x{cell(ms)}{off}")
    print(f"{'PASS' if ran and cpu['max'] <= 0.2 else 'MISS'} encore CPU per step at most 0.2x reduce-overhead's "
          f"in every round: x{cell(cpu)}{off}")


def print_report(rep):
    if rep is None:
        return
    keys = ("phase", "binding", "binding_reason", "captures", "replays", "eager_calls", "eager_by_reason",
            "graph_nodes", "last_capture_us", "graphs_off_reason")
    print("encore (last round): " + " ".join(f"{k}={rep.get(k)}" for k in keys))


def child(a):
    """One run, its result printed on one line for the parent."""
    import torch

    import encore
    import llama_decode
    run = Bench(a, torch, encore, llama_decode).run_way(a.run, a.first_call)
    print(RESULT + json.dumps(run, default=str), flush=True)
    return 0


def main():
    a = parse_args()
    if a.run:
        return child(a)
    print("command: python3 " + " ".join(shlex.quote(x) for x in sys.argv), flush=True)
    if not a.warm_cache:
        print(f"inductor and Triton caches: {fresh_caches()} (new)", flush=True)
    import torch

    import encore
    import llama_decode
    device, software = device_of(torch)
    res = Results("python_compile_bench", a.rounds, device, software)
    b = Bench(a, torch, encore, llama_decode)
    eager = b.eager_tokens()
    runs = b.rounds()
    record(b, res, runs, eager)
    res.doc["info"].update({"inner_mode": a.inner_mode, "compile_s_round1": b.compile_s, "dynamo": b.dynamo,
                            "encore_report": b.reports.get("encore"),
                            "model": {"layers": a.layers, "hidden": a.hidden, "steps": a.steps}})
    print_table(a, torch, res, b.compile_s)
    print_targets(res)
    print_report(b.reports.get("encore"))
    print(f"dynamo, each way's runs: {b.dynamo}")
    return res.finish(a.json, "python_compile_bench.json")


if __name__ == "__main__":
    sys.exit(main())
