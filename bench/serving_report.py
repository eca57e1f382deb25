# SPDX-License-Identifier: Apache-2.0
"""bench/python_serving_bench.py's result file, checks, targets and
printout: each way's metrics over the rounds, the ratios taken round by
round between two ways that ran in the same round, the result checks that
make the run exit 1, and the targets printed as PASS or MISS. A module, not
a benchmark."""

import statistics

from bench_common import cell, ratios
from serving_ways import COMPILED, ENCORE

METRICS = (("first_response_ms", "ms"), ("startup_ms", "ms"), ("p50_first_ms", "ms"), ("p99_first_ms", "ms"),
           ("p50_all_ms", "ms"), ("p99_all_ms", "ms"), ("rps", "1/s"), ("rps_steady", "1/s"),
           ("startup_ms_per_bucket", "ms"), ("capture_ms_per_bucket", "ms"), ("device_mib", "MiB"),
           ("reserved_mib", "MiB"), ("alloc_mib", "MiB"), ("device_mib_per_extra_bucket", "MiB"),
           ("reserved_mib_per_extra_bucket", "MiB"), ("graph_memory_mib", "MiB"), ("padded_share", "share"),
           ("worst_row_error", "relative"))
PRECAPTURED = ("hand", "compile_static", "encore_listed", "encore_compiled")  # every bucket captured at start-up
AROUND_EAGER = ("encore_listed", "encore_learned", "encore_background")  # encore around the eager model: vs hand
NOISE = 1.05  # a batch size counts as slower than eager when its median latency is over this ratio


def derive(b, runs):
    """Per run: start-up per bucket, and memory per extra bucket against the
    one-bucket probe of the same way (encore's for capture=background, which
    ends up holding the same listed buckets)."""
    n = len(b.a.buckets)
    for w, xs in runs.items():
        for x in xs:
            if w in PRECAPTURED:
                x["startup_ms_per_bucket"] = x["startup_ms"] / n
            one = b.one_bucket.get("encore_listed" if w == "encore_background" else w)
            if one is not None and n > 1:
                for key in ("device_mib", "reserved_mib"):
                    x[f"{key}_per_extra_bucket"] = (x[key] - one[key]) / (n - 1)


def encore_check(b, res, w, r, rep):
    """That an encore way's method replayed over the trace by the path it
    is named for (bench_common.graphs_not_run), and did what its flags say."""
    n = len(b.a.buckets)
    need = {"encore_listed": {"precaptures": n}, "encore_background": {"background_captures": 1},
            "encore_compiled": {"precaptures": n}}.get(w, {})
    res.graphs(w, rep, None, f"round {r + 1}", "replayed" + "".join(f", {k} >= {v}" for k, v in need.items()),
               need=need)
    rep = rep or {}
    reasons = rep.get("eager_by_reason", {})
    if w == "encore_listed":
        ok = (rep.get("precaptures") == n and set(reasons) <= {"padding"}
              and rep.get("replays", 0) + reasons.get("padding", 0) == b.a.requests)
        what = f"all {n} buckets precaptured; every request replayed (or ran eagerly for reason padding)"
    elif w == "encore_compiled":  # max_padding=2: an eager call would compile the function at a new size
        ok = rep.get("precaptures") == n and not reasons and rep.get("replays", 0) == b.a.requests
        what = f"all {n} buckets precaptured; every request replayed (none eager)"
    elif w == "encore_learned":
        ok = 0 < len(rep.get("buckets", [])) <= n
        what = f"learned 1..{n} buckets"
    else:
        return
    keys = ("buckets", "precaptures", "background_captures", "calls", "replays", "eager_by_reason")
    res.check(f"{w} round {r + 1}: {what}", ok, " ".join(f"{k}={rep.get(k)}" for k in keys))


def checks(b, res, runs):
    a = b.a
    for w, xs in runs.items():
        res.check(f"{w}: ran all {a.rounds} rounds", len(xs) == a.rounds and w not in b.failed,
                  b.failed.get(w, f"{len(xs)} rounds"))
        bad = [(r + 1, sum(e > a.tolerance for e in x["errors"])) for r, x in enumerate(xs)
               if x["worst_row_error"] > a.tolerance]
        if xs:
            res.check(f"{w}: every response equals eager's within {a.tolerance} in every round", not bad,
                      f"rounds (round, responses off): {bad}" if bad else
                      f"{a.requests} x {len(xs)}, largest row error {max(x['worst_row_error'] for x in xs):.2e}")
        for r, x in enumerate(xs):
            if w in ENCORE:
                encore_check(b, res, w, r, x["report"])
        graphs = [x["dynamo"].get("unique_graphs") for x in xs if w in COMPILED]
        if graphs:  # whatever ran before it, encore ways included, a compiled way compiles as often
            res.check(f"{w}: dynamo compiled as many graphs in every round", len(set(graphs)) == 1,
                      f"unique_graphs per round: {graphs}")
        graphs = [x.get("dynamo", {}).get("unique_graphs") for x in xs if w == "encore_compiled"]
        if graphs:  # one per bucket, in precapture's warmups: none at a capture, none during the traffic
            res.check(f"{w}: dynamo compiled one graph per bucket ({len(a.buckets)}) in every round",
                      all(g == len(a.buckets) for g in graphs), f"unique_graphs per round: {graphs}")


def record(b, res, runs):
    """Metrics, per-round ratios, checks and what the JSON keeps besides."""
    derive(b, runs)
    for w, xs in runs.items():
        for key, unit in METRICS:
            vals = [x.get(key) for x in xs]
            if xs and all(v is not None for v in vals):
                res.metric(f"{w}.{key}", vals, unit)
    full = {w for w, xs in runs.items() if len(xs) == b.a.rounds}

    def per_round(name, num, den, key, unit="x", diff=False):
        if num in full and den in full and all(key in x for x in runs[num] + runs[den]):
            n, d = [x[key] for x in runs[num]], [x[key] for x in runs[den]]
            if diff:
                res.metric(name, [p - q for p, q in zip(n, d)], unit)
            elif all(v > 0 for v in d):
                res.metric(name, ratios(n, d), unit)

    for w in AROUND_EAGER:
        per_round(f"{w}_vs_hand.rps_steady", w, "hand", "rps_steady")
    per_round("encore_compiled_vs_compile_static.rps_steady", "encore_compiled", "compile_static", "rps_steady")
    per_round("encore_compiled_vs_encore_listed.rps_steady", "encore_compiled", "encore_listed", "rps_steady")
    if "encore_compiled" in full and "compile_static" in full:  # its start-up against the other's first response
        res.metric("encore_compiled_vs_compile_static.startup_vs_first_response",
                   ratios([x["startup_ms"] for x in runs["encore_compiled"]],
                          [x["first_response_ms"] for x in runs["compile_static"]]), "x")
    per_round("encore_listed_vs_hand.startup_ms", "encore_listed", "hand", "startup_ms")
    per_round("encore_listed_vs_hand.device_mib_per_extra_bucket", "encore_listed", "hand",
              "device_mib_per_extra_bucket")
    per_round("encore_background_minus_eager.first_response_ms", "encore_background", "eager", "first_response_ms",
              unit="ms", diff=True)
    per_round("encore_background_vs_eager.p99_first_ms", "encore_background", "eager", "p99_first_ms")
    checks(b, res, runs)
    keep(b, res, runs)


def per_size(b, runs, way):
    """Median latency (ms) per batch size over the requests after the first
    --first of every round."""
    per = {}
    for x in runs.get(way, []):
        for i in range(b.a.first, len(b.batches)):
            per.setdefault(b.batches[i], []).append(x["lat"][i])
    return {s: statistics.median(v) for s, v in sorted(per.items())}


def keep(b, res, runs):
    a, info = b.a, res.doc["info"]
    sizes = b.batches
    info.update(model={"encoder": "LlamaModel", "layers": a.layers, "hidden": a.hidden, "seq": b.ctx.seq,
                       "dtype": "bfloat16"},
                trace={"requests": a.requests, "first": a.first, "max_batch": a.max_batch, "zipf": a.zipf,
                       "seed": a.seed, "distinct_sizes": len(set(sizes)), "mean_batch": sum(sizes) / len(sizes),
                       "share_of_batch_1": sizes.count(1) / len(sizes)},
                buckets=list(a.buckets), warmups=a.warmups, tolerance=a.tolerance, failed=b.failed,
                one_bucket_probe=b.one_bucket)
    for w, xs in runs.items():
        if not xs:
            continue
        last = xs[-1]
        info.setdefault("ways", {})[w] = {
            "bitwise_equal_eager": [x["bitwise"] for x in xs], "capture_ms_last_round": last["capture_ms"],
            "bucket_startup_ms_last_round": last["bucket_ms"], "report_last_round": last["report"],
            "flags": last.get("flags"), "dynamo": [x.get("dynamo") for x in xs if "dynamo" in x],
            "median_ms_per_batch_size": per_size(b, runs, w)}


def slower_than_eager(b, runs, way):
    """(sizes over NOISE, worst size, its ratio) of `way` against eager."""
    mine, eager = per_size(b, runs, way), per_size(b, runs, "eager")
    ratio = {s: mine[s] / eager[s] for s in mine if s in eager and eager[s] > 0}
    if not ratio:
        return None
    worst = max(ratio, key=ratio.get)
    return [s for s, v in ratio.items() if v > NOISE], worst, ratio[worst]


def verdict(ok, text, detail, res=None, ways=()):
    """A target's PASS or MISS line; a MISS whatever `ok` when one of the
    encore `ways` did not run as graphs (res.graphs_ran)."""
    off = [w for w in ways if w in ENCORE and res is not None and not res.graphs_ran(w)]
    if off:
        detail += "; graphs did not run: " + "; ".join(f"{w}: {res.not_run[w]}" for w in off)
    print(f"{'PASS' if ok and not off else 'MISS'} {text}: {detail}")


def memory_target(b, res, runs):
    e, h = runs["encore_listed"], runs["hand"]
    text = "encore_listed: device memory per extra bucket <= the hand graphs' + 10% in every round"
    if len(e) != b.a.rounds or len(h) != b.a.rounds or not all("device_mib_per_extra_bucket" in x for x in e + h):
        verdict(False, text, "not measured (a way, or its probe with one bucket, failed)")
        return
    pairs = [(x["device_mib_per_extra_bucket"], y["device_mib_per_extra_bucket"]) for x, y in zip(e, h)]
    verdict(all(p <= 1.1 * q for p, q in pairs), text,
            "MiB (encore, hand) per round: " + ", ".join(f"({p:.2f}, {q:.2f})" for p, q in pairs),
            res, ["encore_listed"])


def targets(b, res, runs):
    m = res.doc["metrics"]

    def target(key, ok, text):  # printed when the ways it compares were among --ways
        s, needs = m.get(key), key.split(".")[0].replace("_minus_", "_vs_").split("_vs_")
        if any(w not in runs for w in needs):
            return
        if s is None:
            why = "; ".join(f"{w} failed: {e}" for w, e in b.failed.items() if w in needs)
            verdict(False, text, f"not measured ({why or 'a way it needs did not run every round'})")
        else:
            verdict(ok(s), text, f"{cell(s)}", res, needs)

    target("encore_background_minus_eager.first_response_ms", lambda s: s["max"] <= 5.0,
           "encore_background: first response within 5 ms of eager's in every round (ms later)")
    target("encore_background_vs_eager.p99_first_ms", lambda s: s["max"] <= 1.2,
           f"encore_background: p99 over the first {b.a.first} requests <= 1.2x eager's in every round")
    for w in AROUND_EAGER:
        target(f"{w}_vs_hand.rps_steady", lambda s: s["min"] >= 0.98,
               f"{w}: steady-state requests/s >= 0.98x the hand-written bucket graphs' in every round")
    target("encore_compiled_vs_compile_static.rps_steady", lambda s: s["min"] >= 0.98,
           "encore_compiled: steady-state requests/s >= 0.98x compile_static's in every round (both padded "
           "to the same buckets)")
    target("encore_compiled_vs_compile_static.startup_vs_first_response", lambda s: s["max"] < 1.0,
           "encore_compiled: start-up (compile + precapture of every bucket) < compile_static's first response "
           "in every round (x its first response)")
    if "encore_listed" in runs and "hand" in runs:
        memory_target(b, res, runs)
    for w in (w for w in ENCORE if w in runs):
        found = slower_than_eager(b, runs, w) if runs.get(w) and runs.get("eager") else None
        verdict(found is not None and not found[0],
                f"{w}: no batch size slower than eager (median per size after the first {b.a.first} requests, "
                f"over {NOISE:.2f}x)", "not measured" if found is None else
                f"{len(found[0])} sizes over: {found[0][:12]}; worst b={found[1]} x{found[2]:.3f}", res, [w])
    target("encore_listed_vs_hand.startup_ms", lambda s: s["max"] <= 1.0,
           "encore_listed: precapture of all buckets no slower than the hand graphs' start-up in every round")


def report(b, res, runs):
    """The table, the ratios, the targets and encore's reports, printed."""
    a, m = b.a, res.doc["metrics"]
    print(f"LlamaModel encoder {a.layers} layers x {a.hidden}, bf16, [b, {b.ctx.seq}] tokens; {a.requests} requests, "
          f"Zipf({a.zipf}) batch sizes 1..{a.max_batch} (mean {sum(b.batches) / len(b.batches):.1f}, "
          f"{len(set(b.batches))} distinct); buckets {list(a.buckets)}; {a.rounds} rounds; median [min-max]")
    for w in runs:
        got = [(k, u) for k, u in METRICS if f"{w}.{k}" in m]
        print(f"{w}:" + ("" if got else " no round finished"))
        for i in range(0, len(got), 3):
            print("    " + " | ".join(f"{k} {cell(m[f'{w}.{k}'], '.3g')} {u}" for k, u in got[i:i + 3]))
    for key in sorted(k for k in m if "_vs_" in k or "_minus_" in k):
        print(f"{key:52s} {cell(m[key])}")
    targets(b, res, runs)
    for w in ENCORE:
        rep = (res.doc["info"].get("ways", {}).get(w) or {}).get("report_last_round")
        if rep:
            keys = ("buckets", "real_rows", "padded_rows", "calls", "replays", "precaptures", "background_captures",
                    "captures", "capture_us", "eager_by_reason", "graph_memory_bytes", "binding", "graphs_off_reason")
            print(f"{w} (last round): " + " ".join(f"{k}={rep.get(k)}" for k in keys))
    for w, e in b.failed.items():
        print(f"FAILED way {w}: {e}")
