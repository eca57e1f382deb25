#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/perf_table.py on synthetic result files (a row per metric as
median [min–max] with its rounds, date, device and command; "not measured"
without a run; no number from a run whose checks failed; the newest run
wins), and on the repository: docs/performance.md is what the script writes
from docs/measurements/.

  python3 tools/perf_table_test.py [PATH/TO/perf_table.py [PATH/TO/performance.md PATH/TO/measurements/earlier.json]]
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

_here = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(_here, "perf_table.py"))
PAGE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(_here, "..", "docs", "performance.md"))
EARLIER = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                          os.path.join(_here, "..", "docs", "measurements", "earlier.json"))
_spec = importlib.util.spec_from_file_location("perf_table", SCRIPT)
perf_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(perf_table)


def stat(median, lo, hi, n=3):
    return {"median": median, "min": lo, "max": hi, "n": n, "unit": "ms"}


def llama_run(date="2026-12-05T10:00:00Z", ok=True, n=3, ms=1.005):
    return {"schema": "encore-bench/1", "benchmark": "python_llama_bench", "date": date, "device": "NVIDIA H200",
            "command": "python3 bench/python_llama_bench.py --rounds 3", "rounds": n,
            "metrics": {"eager.ms_per_token": stat(7.8, 7.7, 7.9, n), "hand_lean.ms_per_token": stat(ms, 1.001, 1.01, n),
                        "hand_copy.ms_per_token": stat(1.006, 1.0, 1.02, n),
                        "encore.ms_per_token": stat(0.999, 0.99, 1.003, n)},
            "checks": [{"name": "hand_lean: tokens equal eager's in every round", "ok": ok, "detail": ""}], "ok": ok}


class Dir:
    """A temporary results folder holding `docs` as JSON files."""

    def __init__(self, *docs):
        self.tmp = tempfile.TemporaryDirectory()
        for i, d in enumerate(docs):
            with open(os.path.join(self.tmp.name, f"run{i}.json"), "w") as f:
                f.write(d if isinstance(d, str) else json.dumps(d))

    def __enter__(self):
        return self.tmp.name

    def __exit__(self, *exc):
        self.tmp.cleanup()


def row(page, start):
    lines = [x for x in page.split("\n") if x.startswith("| " + start)]
    assert len(lines) == 1, (start, lines)
    return lines[0]


LLAMA_MS = "transformers' LlamaForCausalLM (8 layers"


class PerfTableTest(unittest.TestCase):
    def test_without_runs_every_row_is_not_measured(self):
        with Dir() as d:
            page = perf_table.render(d)
        measured = page.split("## Measured")[1].split("## Earlier")[0]
        rows = [x for x in measured.split("\n") if x.startswith("| ") and not x.startswith("| what")]
        self.assertEqual(len(rows), len(perf_table.ROWS))
        for r in rows:
            self.assertIn("not measured", r)
        self.assertIn("| (none) |", page)

    def test_a_run_shows_median_spread_rounds_date_device_command(self):
        with Dir(llama_run()) as d:
            r = row(perf_table.render(d), LLAMA_MS)
        self.assertIn("lean hand graph 1.005 [1.001–1.010]", r)
        self.assertIn("encore 0.999 [0.990–1.003]", r)
        self.assertIn("| 3 | 2026-12-05 | NVIDIA H200 | `python3 bench/python_llama_bench.py --rounds 3` |", r)
        self.assertNotIn("not measured", r)

    def test_a_run_whose_checks_failed_shows_no_number(self):
        with Dir(llama_run(ok=False)) as d:
            r = row(perf_table.render(d), LLAMA_MS)
        self.assertIn("failed its result checks (hand_lean: tokens equal eager's in every round): no number", r)
        self.assertNotIn("1.005", r)

    def test_a_run_with_no_check_shows_no_number(self):
        run = llama_run()
        run["checks"] = []
        with Dir(run) as d:
            r = row(perf_table.render(d), LLAMA_MS)
        self.assertIn("checked no result: no number", r)

    def test_fewer_than_three_rounds_are_marked(self):
        with Dir(llama_run(n=2)) as d:
            r = row(perf_table.render(d), LLAMA_MS)
        self.assertIn("(only 2 rounds)", r)

    def test_the_newest_run_wins_and_a_missing_metric_says_so(self):
        new = llama_run(date="2026-12-06T10:00:00Z", ms=1.111)
        del new["metrics"]["eager.ms_per_token"]
        with Dir(new, llama_run(date="2026-12-05T10:00:00Z", ms=1.222)) as d:
            r = row(perf_table.render(d), LLAMA_MS)
        self.assertIn("lean hand graph 1.111", r)
        self.assertNotIn("1.222", r)
        self.assertIn("eager: — (not in the run)", r)

    def test_earlier_rows_are_shown_apart_and_bad_files_named(self):
        earlier = {"schema": "encore-earlier/1", "rows": [
            {"what": "a | b", "value": "1.5", "date": "2026-11-29", "command": "soak", "note": ""}]}
        with Dir(earlier, "{not json", {"schema": "other"}) as d:
            page = perf_table.render(d)
        self.assertIn("| a \\| b | 1.5 | 2026-11-29 | `soak` |  |", page.split("## Earlier")[1])
        self.assertIn("not JSON", page)
        self.assertIn("schema 'other'", page)

    def test_check_mode_fails_on_a_page_that_differs(self):
        with Dir(llama_run()) as d, tempfile.TemporaryDirectory() as t:
            out = os.path.join(t, "performance.md")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(perf_table.main(["--results", d, "--out", out, "--check"]), 1)
                self.assertEqual(perf_table.main(["--results", d, "--out", out]), 0)
                self.assertEqual(perf_table.main(["--results", d, "--out", out, "--check"]), 0)
            with open(out, "a") as f:
                f.write("| typed by hand | 0.92× |\n")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(perf_table.main(["--results", d, "--out", out, "--check"]), 1)

    def test_the_repository_page_is_what_the_script_writes(self):
        with contextlib.redirect_stdout(io.StringIO()) as log:
            rc = perf_table.main(["--results", os.path.dirname(EARLIER), "--out", PAGE, "--check"])
        self.assertEqual(rc, 0, log.getvalue())


if __name__ == "__main__":
    unittest.main()
