#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/bench_common.py's check that an encore way under test ran as
graphs (graphs_not_run, Results.graphs), on report dicts as Method.report()
gives them: a way that did not replay, whose graphs are off, whose capture
failed, or that did not take the path it is named for (no rebind, a sleep
that gave nothing back) fails its check, makes the run exit 1 with a last
line saying why, and its result file shows no number in tools/perf_table.py.
Python 3, stdlib only (no PyTorch, no GPU).

  python3 tools/bench_common_test.py [PATH/TO/bench_common.py [PATH/TO/perf_table.py]]
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
COMMON = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                         os.path.join(_here, "..", "bench", "bench_common.py"))
TABLE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(_here, "perf_table.py"))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bench_common = _load("bench_common", COMMON)
perf_table = _load("perf_table", TABLE)

# What the RL bench's rebind way reports when its capture fails after the
# first rollout (PyTorch's graph-pool assert) and every call after runs
# eagerly: the fields read here, as a GPU run gave them.
OFF_REASON = ("capture failed at method: method 'rl_decode_step': RuntimeError: it->second->use_count > 0 "
              "INTERNAL ASSERT FAILED at \"/pytorch/c10/cuda/CUDACachingAllocator.cpp\":2799, please report a "
              "bug to PyTorch. ")
RL_EAGER = {"name": "rl_decode_step", "phase": "eager", "calls": 1472, "warmup_calls": 6, "captures": 1,
            "replays": 60, "eager_calls": 1405, "rebinds": 0, "precaptures": 0, "background_captures": 0,
            "graphs_off_reason": OFF_REASON, "eager_by_reason": {"capture_failed": 1405}}
RL_SETUP = {"name": "rl_decode_step", "phase": "replay", "calls": 64, "warmup_calls": 3, "captures": 1,
            "replays": 60, "eager_calls": 0, "rebinds": 0, "graphs_off_reason": None, "eager_by_reason": {}}


def report(**kw):
    """A report of a method that replays, with `kw` changed."""
    r = {"name": "m", "phase": "replay", "calls": 128, "warmup_calls": 2, "captures": 1, "replays": 125,
         "eager_calls": 0, "rebinds": 0, "precaptures": 0, "background_captures": 0, "graphs_off_reason": None,
         "eager_by_reason": {}}
    r.update(kw)
    return r


def finish(res):
    """res.finish into a temporary folder: (exit status, printed lines, the JSON written)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.json")
        out = io.StringIO()
        old = {k: os.environ.pop(k, None) for k in ("OUT", "RESULTS")}
        try:
            with contextlib.redirect_stdout(out):
                rc = res.finish(path, "run.json")
        finally:
            os.environ.update({k: v for k, v in old.items() if v is not None})
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    return rc, out.getvalue().splitlines(), doc


def results():
    with contextlib.redirect_stdout(io.StringIO()):
        return bench_common.Results("python_llama_bench", 3, "NVIDIA H100", {})


class GraphsNotRun(unittest.TestCase):
    def test_a_way_that_replayed_passes(self):
        self.assertEqual(bench_common.graphs_not_run(report()), [])
        self.assertEqual(bench_common.graphs_not_run(report(rebinds=20), report(replays=60), need={"rebinds": 1},
                                                     slept={"Manager.sleep()": 2 << 20}, max_eager=0), [])

    def test_no_replay_fails(self):
        why = bench_common.graphs_not_run(report(replays=0, eager_calls=128, eager_by_reason={"graphs_off": 128}))
        self.assertTrue(any(w.startswith("no replay") for w in why), why)

    def test_no_replay_in_the_part_measured_fails(self):
        why = bench_common.graphs_not_run(report(replays=60), report(replays=60))
        self.assertTrue(any(w.startswith("no replay") for w in why), why)

    def test_graphs_off_fails_and_says_why_on_one_line(self):
        why = bench_common.graphs_not_run(report(graphs_off_reason="capture failed at method:\nRuntimeError: x\n"))
        self.assertEqual(why[0], "graphs off: capture failed at method: RuntimeError: x")

    def test_a_failed_capture_fails(self):
        why = bench_common.graphs_not_run(report(eager_by_reason={"capture_failed": 3}, eager_calls=3))
        self.assertEqual(why, ["3 calls eager for reason capture_failed"])

    def test_a_way_named_for_a_path_that_did_not_take_it_fails(self):
        self.assertEqual(bench_common.graphs_not_run(report(), need={"rebinds": 1}),
                         ["rebinds 0, at least 1 expected"])
        self.assertEqual(bench_common.graphs_not_run(report(precaptures=7), need={"precaptures": 8}),
                         ["precaptures 7, at least 8 expected"])
        self.assertEqual(bench_common.graphs_not_run(report(), need={"background_captures": 1}),
                         ["background_captures 0, at least 1 expected"])

    def test_a_sleep_that_gave_nothing_back_fails(self):
        why = bench_common.graphs_not_run(report(), slept={"Manager.sleep()": 0, "mem_get_info": float("nan")})
        self.assertEqual(len(why), 2, why)

    def test_eager_calls_over_the_limit_fail(self):
        why = bench_common.graphs_not_run(report(eager_calls=1, eager_by_reason={"new_shape": 1}), max_eager=0)
        self.assertEqual(len(why), 1, why)

    def test_no_report_fails(self):
        self.assertEqual(len(bench_common.graphs_not_run(None)), 1)

    def test_the_rl_rebind_way_of_2026_12_07_fails(self):
        why = bench_common.graphs_not_run(RL_EAGER, RL_SETUP, need={"rebinds": 1})
        self.assertTrue(why[0].startswith("graphs off: capture failed at method"), why)
        self.assertIn("1405 calls eager for reason capture_failed", why)
        self.assertTrue(any(w.startswith("no replay (1408 calls") for w in why), why)
        self.assertIn("rebinds 0, at least 1 expected", why)


class ResultsGraphs(unittest.TestCase):
    def test_a_way_that_went_eager_exits_1_and_says_why_in_one_line(self):
        res = results()
        with contextlib.redirect_stdout(io.StringIO()):
            res.check("encore: tokens equal eager's in every round", True)
            ok = res.graphs("encore_rebind", RL_EAGER, RL_SETUP, "round 1", "replayed over the syncs and rebound",
                            need={"rebinds": 1})
        self.assertFalse(ok)
        self.assertFalse(res.graphs_ran("encore_rebind"))
        rc, lines, doc = finish(res)
        self.assertEqual(rc, 1)
        self.assertFalse(doc["ok"])
        self.assertTrue(lines[-1].startswith("FAILED: graphs did not run: encore_rebind: graphs off: capture failed"),
                        lines)
        self.assertIn("INTERNAL ASSERT FAILED", lines[-1])
        self.assertEqual(doc["info"]["graphs_not_run"]["encore_rebind"],
                         bench_common.one_line(f"graphs off: {OFF_REASON}"))
        failed = [c for c in doc["checks"] if not c["ok"]]
        self.assertEqual([c["name"] for c in failed], ["encore_rebind round 1: replayed over the syncs and rebound"])
        # tools/perf_table.py shows no number from the run.
        self.assertFalse(perf_table.checks_ok(doc))
        row = perf_table.measured_row(("decode", "python_llama_bench", [("encore", "encore.ms_per_token", ".3f")],
                                       "python3 bench/python_llama_bench.py"), {"python_llama_bench": doc})
        self.assertIn("the run failed its result checks (encore_rebind round 1: replayed over the syncs and rebound)",
                      row)

    def test_a_way_that_replayed_passes_with_what_it_did(self):
        res = results()
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertTrue(res.graphs("encore", report(rebinds=20), report(replays=60), "round 1",
                                       need={"rebinds": 1}, max_eager=0))
        rc, lines, doc = finish(res)
        self.assertEqual(rc, 0)
        self.assertEqual(doc["checks"], [{"name": "encore round 1: replayed", "ok": True,
                                          "detail": "replays 65; rebinds 20"}])
        self.assertTrue(res.graphs_ran("encore"))
        self.assertNotIn("graphs_not_run", doc["info"])
        self.assertEqual(lines[-1], "all 1 result checks passed")

    def test_the_first_reason_of_a_way_is_kept(self):
        res = results()
        with contextlib.redirect_stdout(io.StringIO()):
            res.graphs("encore", report(replays=0), None, "round 1")
            res.graphs("encore", report(graphs_off_reason="later"), None, "round 2")
        _, lines, _ = finish(res)
        self.assertEqual(lines[-1], "FAILED: graphs did not run: encore: no replay (128 calls, eager by reason {})")


if __name__ == "__main__":
    unittest.main()
