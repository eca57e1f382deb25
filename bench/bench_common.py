# SPDX-License-Identifier: Apache-2.0
"""What the PyTorch benchmarks share: how calls are timed, the result file
(`Results`, the schema tools/perf_table.py reads to write
docs/performance.md) and where their JSON goes (the --json path, plus a
copy in $OUT and in $RESULTS when set; tools/gpu_suite.sh bench sets
RESULTS). A module, not a benchmark: gpu_suite.sh runs only bench/*_bench.py."""

import datetime
import json
import os
import shlex
import statistics
import sys
import time

SCHEMA = "encore-bench/1"
MIN_ROUNDS = 3  # fewer rounds give no spread worth the name: the benchmarks refuse them


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


def timed_decode(torch, fn, d, steps, w0, first_call=False, report=None):
    """Greedy decoding of `steps` tokens with `fn(token, position)` from the
    decoder `d`'s first token (examples/python/llama_decode.py), timed as
    the decode benchmarks report it: the wall time from `w0` until the 4th
    token is on the host side of a sync (and, with `first_call`, until the
    first), then ms per token and this thread's CPU per step over the other
    steps. `report`, if given (an encore method's), is read where the
    timed steps start, untimed (`timed_from`), and after the last step
    (`report`): what `Results.graphs` compares."""
    tok, out, first_ms, timed_from = d.first, [], None, None
    with torch.no_grad():
        for i in range(steps):
            p = d.start + i
            if i == 1 and first_call:
                torch.cuda.synchronize()
                first_ms = (time.perf_counter() - w0) * 1e3
            if i == 4:
                torch.cuda.synchronize()
                first4 = time.perf_counter() - w0
                timed_from = report() if report else None
                w1, c1 = time.perf_counter(), time.thread_time()
            tok = fn(tok, d.positions[p:p + 1])
            out.append(tok)
        c2 = time.thread_time()
        torch.cuda.synchronize()
        w2 = time.perf_counter()
    n = steps - 4
    return {"tokens": torch.cat(out, dim=1), "first_ms": first_ms, "first4_ms": first4 * 1e3,
            "ms_per_token": (w2 - w1) / n * 1e3, "cpu_us_per_step": (c2 - c1) / n * 1e6,
            "timed_from": timed_from, "report": report() if report else None}


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


def stats(values):
    """Median, min, max and count of `values`, and the values themselves."""
    v = [float(x) for x in values]
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v), "values": v}


def ratios(num, den):
    """num[i] / den[i]: one ratio per round, each of two ways that ran in the same round."""
    return [a / b for a, b in zip(num, den)]


def one_line(text, limit=240):
    """`text` on one line (white space folded), cut to `limit` characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[:limit - 3] + "..."


def grown(rep, before, key):
    """How much report counter `key` grew from `before` (None: from 0) to `rep`."""
    return (rep.get(key) or 0) - ((before or {}).get(key) or 0)


def graphs_not_run(rep, before=None, need=None, slept=None, max_eager=None):
    """Why an encore way under test did not run as graphs over the part
    measured, the likeliest cause first; [] when it did. `rep` is its
    method's report() at the end of that part, `before` the report at its
    start (None: the method's start); counters count what they grew by.
    It replayed (replays grew), its graphs are on (graphs_off_reason None)
    and no capture failed (no capture_failed in eager_by_reason); and:
    `need` {counter: n}, the path the way is named for ran (rebinds,
    precaptures, background_captures, captures grew by n or more);
    `slept` {what: bytes}, a sleep measured gave bytes back (each > 0);
    `max_eager`, at most that many eager calls."""
    if not rep:
        return ["no report: the way made no encore method, or it was not read"]
    why = []
    if rep.get("graphs_off_reason"):
        why.append(f"graphs off: {one_line(rep['graphs_off_reason'])}")
    failed = (rep.get("eager_by_reason") or {}).get("capture_failed", 0)
    if failed:
        why.append(f"{failed} calls eager for reason capture_failed")
    if grown(rep, before, "replays") <= 0:
        was = (before or {}).get("eager_by_reason") or {}
        eager = {k: v - was.get(k, 0) for k, v in (rep.get("eager_by_reason") or {}).items() if v > was.get(k, 0)}
        why.append(f"no replay ({grown(rep, before, 'calls')} calls, eager by reason {eager})")
    for key, n in (need or {}).items():
        if grown(rep, before, key) < n:
            why.append(f"{key} {grown(rep, before, key)}, at least {n} expected")
    for what, given in (slept or {}).items():
        if not given > 0:  # NaN included
            why.append(f"{what}: the sleep gave back {given} bytes")
    if max_eager is not None and grown(rep, before, "eager_calls") > max_eager:
        why.append(f"{grown(rep, before, 'eager_calls')} eager calls, at most {max_eager} expected "
                   f"(eager by reason {rep.get('eager_by_reason')})")
    return why


class Results:
    """One run of a benchmark as JSON (schema SCHEMA): the command, the UTC
    date, the device, the rounds, per metric its median, min, max and
    values over the rounds, and the result checks, among them that each
    encore way under test ran as graphs (`graphs`). A run with a failed
    check, or none, exits 1 (`finish`) and tools/perf_table.py shows no
    number from it."""

    def __init__(self, benchmark, rounds, device=None, software=None):
        argv = [os.path.join("bench", os.path.basename(sys.argv[0]))] + sys.argv[1:]
        self.doc = {"schema": SCHEMA, "benchmark": benchmark,
                    "command": "python3 " + " ".join(shlex.quote(x) for x in argv),
                    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "device": device, "software": software or {}, "rounds": rounds, "metrics": {}, "checks": [],
                    "info": {}}
        self.not_run = {}  # way -> why its graphs did not run (the first reason seen)

    def metric(self, key, values, unit):
        self.doc["metrics"][key] = dict(stats(values), unit=unit)

    def check(self, name, ok, detail=""):
        """A result check: printed as it is made, and kept."""
        self.doc["checks"].append({"name": name, "ok": bool(ok), "detail": str(detail)})
        print(f"{'CHECK' if ok else 'CHECK FAILED'}: {name}" + (f" ({detail})" if detail else ""), flush=True)

    def graphs(self, way, rep, before=None, label="", what="replayed", **kw):
        """The check that encore way `way` ran as graphs over the part
        measured (graphs_not_run: `before`, need, slept, max_eager), named
        `way label: what`; a way that did not is remembered, and `finish`
        says why in one line. Returns whether it did."""
        why = graphs_not_run(rep, before, **kw)
        seen = [f"replays {grown(rep or {}, before, 'replays')}"]
        seen += [f"{k} {grown(rep or {}, before, k)}" for k in kw.get("need") or {}]
        seen += [f"{k} {v}" for k, v in (kw.get("slept") or {}).items()]
        self.check(f"{way}{' ' + label if label else ''}: {what}", not why, "; ".join(why or seen))
        if why:
            self.not_run.setdefault(way, why[0])
            self.doc["info"].setdefault("graphs_not_run", {}).setdefault(way, why[0])
        return not why

    def graphs_ran(self, way):
        """False once a graphs check of `way` failed: its targets do not pass."""
        return way not in self.not_run

    @property
    def ok(self):
        return bool(self.doc["checks"]) and all(c["ok"] for c in self.doc["checks"])

    def finish(self, json_path, file_name):
        """Writes the JSON; the exit status: 0 if every check passed, else 1."""
        self.doc["ok"] = self.ok
        errors = []
        write_json(json.dumps(self.doc, indent=1, default=str) + "\n", json_path, file_name, errors)
        for e in errors:
            print(e)
        failed = [c["name"] for c in self.doc["checks"] if not c["ok"]]
        if not self.doc["checks"]:
            print("FAILED: no result was checked")
        elif failed:
            print(f"FAILED: {len(failed)} result check(s) failed: " + "; ".join(failed))
        else:
            print(f"all {len(self.doc['checks'])} result checks passed")
        if self.not_run:
            print("FAILED: graphs did not run: " + "; ".join(f"{w}: {why}" for w, why in self.not_run.items()))
        return 0 if self.ok and not errors else 1


def cell(s, spec=".3f"):
    """A stats dict as `median [min-max]`."""
    return f"{s['median']:{spec}} [{s['min']:{spec}}-{s['max']:{spec}}]"


def device_of(torch):
    """The GPU's name and the software that ran."""
    sw = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    try:
        import transformers
        sw["transformers"] = transformers.__version__
    except ImportError:
        pass
    return torch.cuda.get_device_name(), sw
