#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Renders encore's Manager::ReportJson() as one table per method.

usage: encore_report.py [FILE]       (FILE, or stdin when absent or "-")

The input is the JSON report, or any text holding it on one line (a program's
log, "report: {...}"): the last line whose JSON object has "methods" is used.
Keys a report lacks (older or newer encore) show as "-". Python 3 standard
library only. Exit status: 0, or 2 when no report is found.
"""

import json
import sys


def find_report(text):
    text = text.strip()
    try:
        obj = json.loads(text)
        if isinstance(obj, dict) and "methods" in obj:
            return obj
    except ValueError:
        pass
    found = None
    for line in text.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            obj = json.loads(line[start:])
        except ValueError:
            continue
        if isinstance(obj, dict) and "methods" in obj:
            found = obj
    return found


def human_bytes(n):
    if not isinstance(n, (int, float)):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return "-"


def get(m, key, default="-"):
    v = m.get(key, default)
    return default if v is None else v


def shapes_text(graphs):
    if not graphs:
        return "-"
    parts = []
    for g in graphs:
        parts.append("(" + ", ".join("[" + ",".join(str(d) for d in s) + "]" for s in g) + ")")
    return " ".join(parts)


def method_rows(m):
    flags = m.get("flags") or {}
    rows = []
    rows.append(("phase", "%s   (graphs=%s warmup=%s on_new_shape=%s max_graphs=%s checks=%s)" % (
        get(m, "phase"), "on" if flags.get("graphs", True) else "off", get(flags, "warmup_calls"),
        get(flags, "on_new_shape"), get(flags, "max_graphs"), get(flags, "checks"))))
    rows.append(("calls", "%s   (warmup %s, replays %s, eager %s, refused %s)" % (
        get(m, "calls"), get(m, "warmup_calls"), get(m, "replays"), get(m, "eager_calls"), get(m, "refusals"))))
    graphs_kept = len(m.get("captured_input_shapes") or [])
    rows.append(("graphs", "%d kept, %s captured, %s recaptured, %s failed, %s nodes in the latest" % (
        graphs_kept, get(m, "captures"), get(m, "recaptures"), get(m, "capture_failures"), get(m, "graph_nodes"))))
    rows.append(("executables", "%s instantiated, %s updated in place, %s address variants" % (
        get(m, "instantiations"), get(m, "updates_in_place"), get(m, "exec_variants"))))
    rows.append(("capture time", "%s us total, %s us last" % (get(m, "capture_us"), get(m, "last_capture_us"))))
    why = m.get("graphs_off_reason")
    eager = get(m, "eager_calls")
    rows.append(("eager", "%s calls; graphs off: %s" % (eager, why) if why else "%s calls; graphs on" % eager))
    if "binding" in m:
        b = "%s, %s rebind sites" % (get(m, "binding"), get(m, "rebind_sites"))
        if m.get("binding_reason"):
            b += "; " + str(m["binding_reason"])
        rows.append(("binding", b))
    else:
        rows.append(("binding", "-"))
    if "verified_launches" in m or "verify_failures" in m:
        rows.append(("verification", "%s launches checked, %s mismatches" % (
            get(m, "verified_launches"), get(m, "verify_failures"))))
    else:
        rows.append(("verification", "-"))
    rows.append(("device checks", "%s failed" % get(m, "check_failures")))
    if flags.get("on_new_shape") == "pad" or m.get("buckets"):
        real, padded = m.get("real_rows") or 0, m.get("padded_rows") or 0
        share = 100.0 * padded / (real + padded) if real + padded else 0.0
        kind = "listed" if flags.get("buckets") else "learned"
        rows.append(("buckets", "%s (%s, %s changes); rows %s real, %s padded (%.1f%%)" % (
            "|".join(str(b) for b in (m.get("buckets") or [])) or "-", kind, get(m, "bucket_changes"), real,
            padded, share)))
    if "graph_memory_bytes" in m:
        rows.append(("graph memory", "%s; %s graphs dropped, %s calls eager for the budget; %s precaptured" % (
            human_bytes(m.get("graph_memory_bytes")), get(m, "budget_drops"), get(m, "over_budget_calls"),
            get(m, "precaptures"))))
    mem = m.get("memory") or {}
    rows.append(("memory", "reserved %s, live %s, peak %s" % (
        human_bytes(mem.get("reserved_bytes")), human_bytes(mem.get("live_bytes")),
        human_bytes(mem.get("peak_bytes")))))
    rows.append(("input shapes", shapes_text(m.get("captured_input_shapes"))))
    rows.append(("devices", str(get(m, "devices"))))
    return rows


def render(report):
    out = []
    head = "encore %s (report schema %s): %d method%s" % (
        report.get("encore_version", "?"), report.get("schema_version", "?"), len(report["methods"]),
        "" if len(report["methods"]) == 1 else "s")
    out.append(head)
    for m in report["methods"]:
        out.append("")
        out.append("method %s" % get(m, "name", "?"))
        rows = method_rows(m)
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            out.append("  %s  %s" % (k.ljust(width), v))
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        sys.stderr.write(__doc__)
        return 2 if len(argv) > 2 else 0
    if len(argv) == 2 and argv[1] != "-":
        with open(argv[1], encoding="utf-8") as f:
            text = f.read()
    else:
        text = sys.stdin.read()
    report = find_report(text)
    if report is None:
        sys.stderr.write("encore_report: no JSON object with \"methods\" found in the input\n")
        return 2
    sys.stdout.write(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
