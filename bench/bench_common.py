# SPDX-License-Identifier: Apache-2.0
"""What the PyTorch benchmarks share: how calls are timed, and where their
JSON goes (the --json path, plus a copy in $OUT and in $RESULTS when set;
tools/gpu_suite.sh bench sets RESULTS). A module, not a benchmark:
gpu_suite.sh runs only bench/*_bench.py."""

import os
import statistics
import time


def measure(torch, n, repeats, warmup, variants, barrier=None):
    """Median CPU (submit) and end-to-end (submit + sync) us per call of each
    (name, call) in variants, like MeasureInterleaved in bench/bench_util.h:
    repeat r of every variant runs before repeat r+1 of any; barrier(), if
    given, runs before each timed run (ranks line up there)."""
    for _, call in variants:
        for i in range(warmup):
            call(i)
    torch.cuda.synchronize()
    cpu = {name: [] for name, _ in variants}
    e2e = {name: [] for name, _ in variants}
    for _ in range(repeats):
        for name, call in variants:
            if barrier:
                barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(n):
                call(i)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            cpu[name].append((t1 - t0) * 1e6 / n)
            e2e[name].append((t2 - t0) * 1e6 / n)
    return {name: {"cpu_us": round(statistics.median(cpu[name]), 3), "e2e_us": round(statistics.median(e2e[name]), 3)}
            for name, _ in variants}


def timed_decode(torch, fn, d, steps, w0, first_call=False):
    """Greedy decoding of `steps` tokens with `fn(token, position)` from the
    decoder `d`'s first token (examples/python/llama_decode.py), timed as
    the decode benchmarks report it: the wall time from `w0` until the 4th
    token is on the host side of a sync (and, with `first_call`, until the
    first), then ms per token and this thread's CPU per step over the other
    steps."""
    tok, out, first_ms = d.first, [], None
    with torch.no_grad():
        for i in range(steps):
            p = d.start + i
            if i == 1 and first_call:
                torch.cuda.synchronize()
                first_ms = (time.perf_counter() - w0) * 1e3
            if i == 4:
                torch.cuda.synchronize()
                first4 = time.perf_counter() - w0
                w1, c1 = time.perf_counter(), time.thread_time()
            tok = fn(tok, d.positions[p:p + 1])
            out.append(tok)
        c2 = time.thread_time()
        torch.cuda.synchronize()
        w2 = time.perf_counter()
    n = steps - 4
    return {"tokens": torch.cat(out, dim=1), "first_ms": first_ms, "first4_ms": first4 * 1e3,
            "ms_per_token": (w2 - w1) / n * 1e3, "cpu_us_per_step": (c2 - c1) / n * 1e6}


def result_dirs():
    dirs = []
    for env in ("OUT", "RESULTS"):
        d = os.environ.get(env)
        if d and d not in dirs:
            dirs.append(d)
    return dirs


def write_json(text, json_path, file_name, errors):
    """Writes text to json_path and to file_name in each result dir, once per
    distinct file; appends a message to errors for each that fails."""
    written = []
    for p in [json_path] + [os.path.join(d, file_name) for d in result_dirs()]:
        if os.path.abspath(p) in written:
            continue
        try:
            with open(p, "w") as f:
                f.write(text)
            written.append(os.path.abspath(p))
            print(f"wrote {p}")
        except OSError as e:
            errors.append(f"could not write {p}: {e}")
