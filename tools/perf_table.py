#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes docs/performance.md from the benchmarks' result files: no number
in it is typed by hand.

  python3 tools/perf_table.py [--results DIR] [--out FILE] [--check]

DIR (default docs/measurements/) holds JSON files of two kinds:

- schema "encore-bench/1": one run of a benchmark, as the benchmarks write
  it (bench/bench_common.py `Results`, bench/bench_util.h `ResultFile`): the
  command, the UTC date, the device, the rounds, per metric its median, min,
  max and count over the rounds, and the result checks. Copy a GPU run's
  files here (from $OUT or $RESULTS) and run this script.
- schema "encore-earlier/1": numbers from before the table was generated,
  each with its date, command and where it came from; shown apart, as such.

Each row of the measured table (ROWS) names its benchmark and the metrics it
shows. A row shows the newest run of its benchmark (by date, then file name):
each metric as `median [min–max]` over the run's rounds, with the rounds, date,
device and command. A row without a run says "not measured"; a run whose
result checks failed shows no number; a metric over fewer than MIN_ROUNDS
rounds is marked. --check writes nothing and exits 1 when FILE differs from
what would be written (tools/perf_table_test.py runs it on the repository).
Python 3, stdlib only.
"""

import argparse
import glob
import json
import os
import sys

SCHEMA = "encore-bench/1"
EARLIER_SCHEMA = "encore-earlier/1"
MIN_ROUNDS = 3
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = "docs/measurements"


def _b(k, way, m):
    return f"k{k}.{way}.{m}"


_AUTO2, _AUTO64 = "encore auto, 2 pairs", "encore auto, 64 pairs"
_LLAMA4 = (("eager", "eager"), ("lean hand graph", "hand_lean"), ("copy-heavy hand graph", "hand_copy"),
           ("encore", "encore"))
_COMPILE5 = (("compiled", "compiled"), ("reduce-overhead", "reduce_overhead"), ("lean hand graph", "hand_lean"),
             ("copy-heavy hand graph", "hand_copy"), ("encore", "encore"))
_LOOP6 = (("eager", "eager"), ("lean hand graph", "hand_lean"), ("copy-heavy hand graph", "hand_copy"),
          ("encore, a call per token", "encore_step"), ("encore.while_loop 16", "encore_loop16"),
          ("encore.while_loop 64", "encore_loop64"))
_SERVE8 = (("eager", "eager"), ("hand bucket graphs", "hand"), ("reduce-overhead, static", "compile_static"),
           ("reduce-overhead, dynamic", "compile_dynamic"), ("encore, listed + precapture", "encore_listed"),
           ("encore, learned", "encore_learned"), ("encore, background", "encore_background"),
           ("encore around torch.compile, listed + precapture", "encore_compiled"))
_SERVE_CMD = "python3 bench/python_serving_bench.py"
_RL3 = (("hand graph, copy_", "hand_copy"), ("encore, rebind", "encore_rebind"),
        ("encore, recapture", "encore_recapture"))
_RL_CMD = "python3 bench/python_rl_bench.py"

# (what is measured, benchmark, [(label, metric key, format)], command).
ROWS = [
    ("A replay, 1 kernel, 2 buffer pairs taking turns (binding=auto), against its bare twin (2 executables over "
     "the same buffers ending in a record node) and the fastest bare variant that does no more work; ×",
     "binding_micro", [("CPU ×twin", _b(1, _AUTO2, "cpu_vs_twin"), ".3f"),
                       ("e2e ×twin", _b(1, _AUTO2, "e2e_vs_twin"), ".3f"),
                       ("CPU ×fastest", _b(1, _AUTO2, "cpu_vs_divisor"), ".3f"),
                       ("e2e ×fastest", _b(1, _AUTO2, "e2e_vs_divisor"), ".3f")], "binding_micro 1 128"),
    ("The same, 64 buffer pairs rotating (twin: 64 executables ending in a record node); ×", "binding_micro",
     [("CPU ×twin", _b(1, _AUTO64, "cpu_vs_twin"), ".3f"), ("e2e ×twin", _b(1, _AUTO64, "e2e_vs_twin"), ".3f"),
      ("CPU ×fastest", _b(1, _AUTO64, "cpu_vs_divisor"), ".3f"),
      ("e2e ×fastest", _b(1, _AUTO64, "e2e_vs_divisor"), ".3f")], "binding_micro 1 128"),
    ("The same, fixed buffers (twin: 1 executable ending in a record node); ×", "binding_micro",
     [("CPU ×twin", _b(1, "encore auto, fixed buffers", "cpu_vs_twin"), ".3f"),
      ("e2e ×twin", _b(1, "encore auto, fixed buffers", "e2e_vs_twin"), ".3f")], "binding_micro 1 128"),
    ("A replay, 1 kernel, µs per call: encore auto with 2 pairs / its twin / 1 bare executable on fixed buffers",
     "binding_micro", [("CPU", _b(1, _AUTO2, "cpu_us"), ".2f"),
                       ("twin CPU", _b(1, "2 execs + record node, one event", "cpu_us"), ".2f"),
                       ("fixed CPU", _b(1, "bare graph, fixed buffers", "cpu_us"), ".2f"),
                       ("e2e", _b(1, _AUTO2, "e2e_us"), ".2f"),
                       ("twin e2e", _b(1, "2 execs + record node, one event", "e2e_us"), ".2f"),
                       ("fixed e2e", _b(1, "bare graph, fixed buffers", "e2e_us"), ".2f")], "binding_micro 1 128"),
    ("A replay, 128 kernels, 2 / 64 pairs (binding=auto), e2e; ×", "binding_micro",
     [("2 pairs ×twin", _b(128, _AUTO2, "e2e_vs_twin"), ".3f"), ("×fastest", _b(128, _AUTO2, "e2e_vs_divisor"), ".3f"),
      ("64 pairs ×twin", _b(128, _AUTO64, "e2e_vs_twin"), ".3f"),
      ("×fastest", _b(128, _AUTO64, "e2e_vs_divisor"), ".3f")], "binding_micro 1 128"),
    ("A replay, 128 kernels, 96 address sets over 64 kept executables (every call rewrites one), against 64 bare "
     "executables ending in a record node, one rewritten per call; ×", "binding_micro",
     [("e2e ×twin", _b(128, "encore direct, 96 pairs (64 executables)", "e2e_vs_twin"), ".3f"),
      ("CPU ×twin", _b(128, "encore direct, 96 pairs (64 executables)", "cpu_vs_twin"), ".3f")],
     "binding_micro 1 128"),
    ("transformers' LlamaForCausalLM (8 layers × 1024, 128 steps unless the command says otherwise), bf16, "
     "StaticCache, greedy: ms per token",
     "python_llama_bench", [(n, f"{w}.ms_per_token", ".3f") for n, w in _LLAMA4],
     "python3 bench/python_llama_bench.py"),
    ("The same, this thread's CPU µs per step", "python_llama_bench",
     [(n, f"{w}.cpu_us_per_step", ".1f") for n, w in _LLAMA4], "python3 bench/python_llama_bench.py"),
    ("The same, encore per round against each hand graph; ×", "python_llama_bench",
     [("ms/token ×lean", "encore_vs_hand_lean.ms_per_token", ".3f"),
      ("CPU ×lean", "encore_vs_hand_lean.cpu_us_per_step", ".3f"),
      ("ms/token ×copy-heavy", "encore_vs_hand_copy.ms_per_token", ".3f"),
      ("CPU ×copy-heavy", "encore_vs_hand_copy.cpu_us_per_step", ".3f")], "python3 bench/python_llama_bench.py"),
    ("The same, the first 4 tokens (ms, warmups and capture included) and the PyTorch allocator's peak (MiB)",
     "python_llama_bench", [(f"{n} ms", f"{w}.first4_ms", ".1f") for n, w in _LLAMA4] +
     [(f"{n} MiB", f"{w}.peak_alloc_mib", ".1f") for n, w in _LLAMA4], "python3 bench/python_llama_bench.py"),
    ("The same decode under torch.compile (default mode inside), each run a process of its own: ms per token",
     "python_compile_bench", [(n, f"{w}.ms_per_token", ".3f") for n, w in _COMPILE5],
     "python3 bench/python_compile_bench.py"),
    ("The same, CPU µs per step", "python_compile_bench", [(n, f"{w}.cpu_us_per_step", ".1f") for n, w in _COMPILE5],
     "python3 bench/python_compile_bench.py"),
    ("The same, encore per round against reduce-overhead and the lean hand graph; ×", "python_compile_bench",
     [("ms/token ×reduce-overhead", "encore_vs_reduce_overhead.ms_per_token", ".3f"),
      ("CPU ×reduce-overhead", "encore_vs_reduce_overhead.cpu_us_per_step", ".3f"),
      ("ms/token ×lean", "encore_vs_hand_lean.ms_per_token", ".3f"),
      ("CPU ×lean", "encore_vs_hand_lean.cpu_us_per_step", ".3f")], "python3 bench/python_compile_bench.py"),
    ("The same, the first 4 tokens of a run (ms, compiling included; round 1 compiles with cold caches)",
     "python_compile_bench", [(n, f"{w}.first4_ms", ".0f") for n, w in _COMPILE5],
     "python3 bench/python_compile_bench.py"),
    ("Greedy Llama decoding checking an end token after every token, 2 layers × 512, tokens/s",
     "python_loop_bench", [(n, f"2x512.{w}.tokens_per_s", ".0f") for n, w in _LOOP6],
     "python3 bench/python_loop_bench.py"),
    ("The same, 8 layers × 1024, tokens/s", "python_loop_bench",
     [(n, f"8x1024.{w}.tokens_per_s", ".0f") for n, w in _LOOP6], "python3 bench/python_loop_bench.py"),
    ("The same, host reads per token, 2 layers × 512", "python_loop_bench",
     [(n, f"2x512.{w}.host_reads_per_token", ".3f") for n, w in _LOOP6[3:]], "python3 bench/python_loop_bench.py"),
    ("transformers' LlamaModel as an encoder (4 layers × 1024, bf16, [b, 64] tokens), 2,000 requests of "
     "Zipf-distributed batch sizes 1–128 back to back, unless the command says otherwise: requests/s after the "
     "first 200", "python_serving_bench",
     [(n, f"{w}.rps_steady", ".0f") for n, w in _SERVE8], _SERVE_CMD),
    ("The same, p99 latency over the first 200 requests (ms)", "python_serving_bench",
     [(n, f"{w}.p99_first_ms", ".2f") for n, w in _SERVE8], _SERVE_CMD),
    ("The same, p99 latency over all requests (ms)", "python_serving_bench",
     [(n, f"{w}.p99_all_ms", ".2f") for n, w in _SERVE8], _SERVE_CMD),
    ("The same, the first response (ms, start-up included: captures, precapture, compiling)",
     "python_serving_bench", [(n, f"{w}.first_response_ms", ".1f") for n, w in _SERVE8], _SERVE_CMD),
    ("The same, device memory held at the end (MiB), and per bucket beyond the largest", "python_serving_bench",
     [(n, f"{w}.device_mib", ".0f") for n, w in _SERVE8] +
     [("hand per extra bucket", "hand.device_mib_per_extra_bucket", ".1f"),
      ("encore per extra bucket", "encore_listed.device_mib_per_extra_bucket", ".1f")], _SERVE_CMD),
    ("The same, encore per round against the hand bucket graphs; ×", "python_serving_bench",
     [("req/s listed ×hand", "encore_listed_vs_hand.rps_steady", ".3f"),
      ("req/s learned ×hand", "encore_learned_vs_hand.rps_steady", ".3f"),
      ("req/s background ×hand", "encore_background_vs_hand.rps_steady", ".3f"),
      ("precapture ×hand start-up", "encore_listed_vs_hand.startup_ms", ".3f"),
      ("memory per extra bucket ×hand", "encore_listed_vs_hand.device_mib_per_extra_bucket", ".3f")], _SERVE_CMD),
    ("The same, encore around torch.compile(mode=\"default\") per round against reduce-overhead, static (both "
     "padded to the same buckets) and against encore around the eager model; ×", "python_serving_bench",
     [("req/s ×reduce-overhead", "encore_compiled_vs_compile_static.rps_steady", ".3f"),
      ("start-up ×its first response", "encore_compiled_vs_compile_static.startup_vs_first_response", ".3f"),
      ("req/s ×encore listed", "encore_compiled_vs_encore_listed.rps_steady", ".3f")], _SERVE_CMD),
    ("Rollouts between weight syncs: LlamaForCausalLM (8 layers × 1024, bf16, StaticCache), 64 tokens after each "
     "of 20 syncs (new tensors each sync): from the sync to the first token a graph served (ms)", "python_rl_bench",
     [(n, f"{w}.sync_to_first_replay_ms", ".2f") for n, w in _RL3], _RL_CMD),
    ("The same, recaptures and rebinds over the syncs, and the rebind against a recapture and the hand copy; ×",
     "python_rl_bench", [("rebind recaptures", "encore_rebind.recaptures", ".0f"),
                         ("rebinds", "encore_rebind.rebinds", ".0f"),
                         ("×recapture", "encore_rebind_vs_encore_recapture.sync_to_first_replay_ms", ".3f"),
                         ("×hand copy_", "encore_rebind_vs_hand_copy.sync_to_first_replay_ms", ".3f")], _RL_CMD),
    ("The same, encore's sleep: device memory given back against graph memory held (MiB), wake to the first "
     "replay against capturing again (ms)", "python_rl_bench",
     [("given back", "encore_rebind.sleep_device_mib", ".0f"),
      ("graph memory", "encore_rebind.graph_memory_mib", ".0f"),
      ("wake", "encore_rebind.wake_to_first_replay_ms", ".2f"),
      ("capture again", "encore_rebind.capture_again_ms", ".1f")], _RL_CMD),
]


def load(results_dir):
    """({benchmark: newest run}, [earlier rows], [problems]) from the JSON in results_dir."""
    runs, earlier, problems = {}, [], []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{os.path.basename(path)}: not JSON ({e})")
            continue
        if doc.get("schema") == EARLIER_SCHEMA:
            earlier += doc.get("rows", [])
        elif doc.get("schema") == SCHEMA and doc.get("benchmark"):
            key = (doc.get("date") or "", os.path.basename(path))
            old = runs.get(doc["benchmark"])
            if old is None or key > old[0]:
                runs[doc["benchmark"]] = (key, doc)
        else:
            problems.append(f"{os.path.basename(path)}: schema {doc.get('schema')!r} is neither {SCHEMA} nor "
                            f"{EARLIER_SCHEMA}")
    return {b: d for b, (_, d) in runs.items()}, earlier, problems


def checks_ok(doc):
    checks = doc.get("checks") or []
    return bool(checks) and doc.get("ok", True) is not False and all(c.get("ok") for c in checks)


def fmt_metric(label, m, spec):
    if m is None:
        return f"{label}: — (not in the run)"
    text = f"{label} {m['median']:{spec}} [{m['min']:{spec}}–{m['max']:{spec}}]"
    return text + (f" (only {m['n']} rounds)" if m.get("n", 0) < MIN_ROUNDS else "")


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def measured_row(row, runs):
    what, bench, metrics, command = row
    doc = runs.get(bench)
    if doc is None:
        return f"| {cell(what)} | not measured: no run of `{bench}` yet | | | | `{command}` |"
    if not checks_ok(doc):
        failed = [c["name"] for c in doc.get("checks") or [] if not c.get("ok")]
        value = ("the run failed its result checks (" + "; ".join(failed) + "): no number" if failed
                 else "the run checked no result: no number")
    else:
        value = "; ".join(fmt_metric(label, doc.get("metrics", {}).get(key), spec) for label, key, spec in metrics)
    return (f"| {cell(what)} | {cell(value)} | {doc.get('rounds', '?')} | {str(doc.get('date', '?'))[:10]} | "
            f"{cell(doc.get('device') or '?')} | `{cell(doc.get('command') or command)}` |")


def earlier_row(r):
    return (f"| {cell(r['what'])} | {cell(r['value'])} | {r['date']} | `{cell(r['command'])}` | "
            f"{cell(r.get('note', ''))} |")


def render(results_dir):
    runs, earlier, problems = load(results_dir)
    rel = RESULTS_DIR  # named as in the repository, wherever the files were read from
    out = [HEAD.format(results=rel, min_rounds=MIN_ROUNDS), "",
           "| what is measured | median [min–max] over the rounds | rounds | date | device | command |",
           "|---|---|---|---|---|---|"]
    out += [measured_row(r, runs) for r in ROWS]
    out += ["", EARLIER_HEAD.format(results=rel), "", "| what is measured | then | date | command | note |",
            "|---|---|---|---|---|"]
    out += [earlier_row(r) for r in earlier] or ["| (none) | | | | |"]
    if problems:
        out += ["", "Files in `%s` that were not read: %s." % (rel, "; ".join(problems))]
    return "\n".join(out + ["", TAIL]) + "\n"


HEAD = """# Performance

<!-- Written by `python3 tools/perf_table.py` from the JSON files in {results}/:
     edit that script or those files, not this page. -->

encore's numbers, each from a benchmark's result file: the command that
made it, when, on which device, over how many rounds, and each number's
median with its spread (min–max) over the rounds. Ways take turns round by
round, in an order that rotates; a ratio is taken round by round between
two ways that ran in the same round. Every benchmark here checks its
results (tokens equal to the reference's, outputs equal to an eager run's)
and a run with a wrong result exits non-zero: its row shows no number.
What each benchmark does, its variants and flags: `bench/README.md`.

## How to make them

On a build machine (Bazel and the CUDA toolkit, no GPU needed):

```sh
tools/gpu_suite.sh build --//tools:cuda_archs=sm_90   # stages gpu_bin/ (bench binaries and bench/*.py included)
```

On the GPU machine, `gpu_bin/tools/gpu_suite.sh bench` runs the benchmark
binaries (results in `$OUT` or `gpu_bin/results/`), and from the repository,
once the Python package is installed (`tools/gpu_suite.sh python`), each
`python3 bench/python_*_bench.py` writes its JSON to `$OUT` too. Copy the
JSON files into `{results}/` and run `python3 tools/perf_table.py`, which
writes this page; CI fails when the page and the files disagree.

## Measured

µs per call unless said otherwise; CPU is the time to submit the calls
(from Python, this thread's CPU clock), e2e adds the wait for the GPU; ×
is a ratio, taken round by round. A benchmark refuses fewer than
{min_rounds} rounds. "Twin": the bare CUDA graphs that do what encore's
graphs do (the same executables over the same buffers, ending in the same
completion record node); "fastest": the fastest of the bare variants that
do no more work than encore's (the twin, the twin without its record node,
one executable on fixed buffers), the divisor of `binding_micro`'s targets.
The hand graphs: the lean one writes its token into its own input buffer
and keeps it with one `clone()`; the copy-heavy one copies the token and
position in and clones the result out."""

EARLIER_HEAD = """## Earlier numbers, not from a result file

Numbers typed into this page by hand before it was generated, kept in
`{results}/earlier.json` with their date and command: one NVIDIA H200
(sm_90), the CUDA 13 runtime, driver 580.159.04, the tensor-parallel lines
on two H200s of one host. Their benchmarks wrote no result file then, so
their rounds and spread were not recorded. The rows of benchmarks changed
since (`binding_micro`, the Python decode benchmarks) are left out: they
are in the table above once measured again."""

TAIL = """## Reading the numbers

- **A Python call's floor is PyTorch's.** A call that returns new tensors
  pays for making them; `outputs=reuse` returns the graph's own.
- **A loop on the device helps when the host round trip is a large part of
  a token.** A GPU-bound step gains little from removing a host read per
  token; the loop removes the host reads.
- **Buffer placement moves latency-bound kernels.** The same graphs read
  differently on other buffers, so `binding_micro` compares each encore
  variant with bare graphs over the same buffers, and `stages_micro` runs
  every variant on one output buffer.
- **The completion record node.** Every encore graph ends in an event
  record node, so a later call on another stream, or `Release()`, can wait
  on it; the twins end in one too, and the variants without it show what it
  costs."""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(REPO, "docs", "measurements"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "performance.md"))
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from what would be written")
    a = ap.parse_args(argv)
    text = render(a.results)
    if a.check:
        try:
            with open(a.out, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = None
        if current != text:
            print(f"{a.out} is not what tools/perf_table.py writes from {a.results}: run "
                  f"`python3 tools/perf_table.py` (and edit the script or the result files, not the page)")
            return 1
        print(f"{a.out} is up to date with {a.results}")
        return 0
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
