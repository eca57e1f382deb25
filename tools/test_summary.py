#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts GoogleTest results and prints one line: `N passed, N failed, N skipped`.

Sources, any mix of them:

  PATH ...              gtest XML files, or directories searched recursively for
                        *.xml; every <testcase> counts once.
  --run XML=RC          one test binary's run: XML is the file it was told to
                        write (--gtest_output=xml:XML), RC its exit status. A
                        missing or unreadable XML counts as 1 failed (the binary
                        crashed before writing it); a non-zero RC with no failed
                        testcase in the XML adds 1 failed (a crash after the
                        tests, a leak checker, compute-sanitizer).
  --bep FILE            a Bazel build event file (--build_event_json_file) of a
                        `bazel test` run: only the test.xml files of tests that
                        ran (or were cached) in that invocation count, each like
                        --run; a test target that failed to build counts as 1
                        failed, one skipped as incompatible (a library this
                        machine lacks: PyTorch) as 1 skipped. --test_tag_filters says which test targets the
                        run was meant to test (same syntax as Bazel's).
  --exit NAME=RC        one program that writes no XML (an example binary)
                        counts as one test: RC 0 passed, 77 skipped (the
                        automake convention, e.g. "no GPU here"), else failed.
  --passed/--failed/--skipped N
                        add whole results counted elsewhere.

A testcase is skipped if it has result="skipped" (or "suppressed", a DISABLED_
test) or a <skipped> child, failed if it has a <failure> or <error> child, and
passed otherwise. The exit status is 1 when anything failed, else 0 (2 for a
usage error). The summary is always the last line printed; failed testcases are
listed above it.
"""

import argparse
import json
import os
import sys
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []  # human-readable names of failed things

    def fail(self, what):
        self.failed += 1
        self.failures.append(what)

    def line(self):
        return "%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped)


def count_xml(path, tally, origin=None):
    """Adds the testcases of one XML file; returns the number that failed, or None if unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    failed = 0
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        suite = case.get("classname")
        full = "%s.%s" % (suite, name) if suite else name
        children = {child.tag for child in case}
        if "failure" in children or "error" in children:
            failed += 1
            tally.fail("%s (%s)" % (full, origin or path))
        elif case.get("result") in ("skipped", "suppressed") or "skipped" in children:
            tally.skipped += 1
        else:
            tally.passed += 1
    return failed


def count_run(xml_path, rc, tally, origin):
    """rc: an exit status (0 is success) or a Bazel test status name."""
    how = "exit %d" % rc if isinstance(rc, int) else "status %s" % rc
    failed = count_xml(xml_path, tally, origin) if xml_path else None
    if failed is None:
        if rc == 0 and not xml_path:
            tally.passed += 1  # passed, and wrote no XML (not a gtest binary)
        else:
            tally.fail("%s (%s, no readable XML%s)" % (origin, how, ": " + xml_path if xml_path else ""))
    elif rc != 0 and failed == 0:
        tally.fail("%s (%s, though its XML shows no failed testcase)" % (origin, how))


def xml_files(path):
    if os.path.isdir(path):
        found = []
        for dirpath, _, files in os.walk(path):
            found.extend(os.path.join(dirpath, f) for f in files if f.endswith(".xml"))
        return sorted(found)
    return [path]


def tag_filter_selects(filters, tags):
    """Bazel's --test_tag_filters: every -tag excluded; if any +tag is given, one must match."""
    required = [f.lstrip("+") for f in filters if f and not f.startswith("-")]
    excluded = [f[1:] for f in filters if f.startswith("-")]
    if any(t in tags for t in excluded):
        return False
    return not required or any(t in tags for t in required)


def uri_path(uri):
    if uri.startswith("file://"):
        return urllib.request.url2pathname(urllib.parse.urlparse(uri).path)
    return None


def count_bep(path, tag_filters, tally):
    configured = {}  # label -> (is_test, tags)
    completed = {}  # label -> built ok
    incompatible = set()  # skipped: incompatible with the platform (a library this machine lacks)
    attempts = {}  # (label, run, shard) -> (attempt, status, xml)
    ran = set()
    with open(path) as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            event = json.loads(raw)
            eid = event.get("id", {})
            if "targetConfigured" in eid:
                cfg = event.get("configured", {})
                is_test = "testSize" in cfg or cfg.get("targetKind", "").endswith("_test rule")
                configured[eid["targetConfigured"]["label"]] = (is_test, cfg.get("tag", []))
            elif "targetCompleted" in eid:
                label = eid["targetCompleted"]["label"]
                if event.get("aborted", {}).get("reason") == "SKIPPED":
                    incompatible.add(label)
                ok = bool(event.get("completed", {}).get("success")) and "aborted" not in event
                completed[label] = completed.get(label, True) and ok
            elif "testResult" in eid:
                tid = eid["testResult"]
                key = (tid["label"], tid.get("run", 1), tid.get("shard", 1))
                attempt = tid.get("attempt", 1)
                result = event.get("testResult", {})
                xml = None
                for out in result.get("testActionOutput", []):
                    if out.get("name") in ("test.xml",) or out.get("name", "").endswith(".xml"):
                        xml = uri_path(out.get("uri", ""))
                if key not in attempts or attempts[key][0] <= attempt:
                    attempts[key] = (attempt, result.get("status", "NO_STATUS"), xml)
                ran.add(tid["label"])
    for (label, run, shard), (_, status, xml) in sorted(attempts.items()):
        origin = label if (run, shard) == (1, 1) else "%s run %d shard %d" % (label, run, shard)
        count_run(xml, 0 if status in ("PASSED", "FLAKY") else status, tally, origin)
    for label, (is_test, tags) in sorted(configured.items()):
        if not is_test or label in ran or not tag_filter_selects(tag_filters, tags):
            continue
        if label in incompatible:
            tally.skipped += 1
            continue
        if completed.get(label) is False:
            tally.fail("%s (failed to build)" % label)
        elif label not in completed:
            tally.fail("%s (did not build or run: the build stopped)" % label)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="gtest XML files or directories")
    parser.add_argument("--run", action="append", default=[], metavar="XML=RC")
    parser.add_argument("--exit", action="append", default=[], metavar="NAME=RC")
    parser.add_argument("--bep", action="append", default=[], metavar="FILE")
    parser.add_argument("--test_tag_filters", "--test-tag-filters", default="")
    parser.add_argument("--passed", type=int, default=0)
    parser.add_argument("--failed", type=int, default=0)
    parser.add_argument("--skipped", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="do not list failed testcases")
    args = parser.parse_args(argv)

    tally = Tally()
    for path in args.paths:
        if not os.path.exists(path):
            tally.fail("%s (no such file or directory)" % path)
            continue
        for xml in xml_files(path):
            if count_xml(xml, tally) is None:
                tally.fail("%s (unreadable XML)" % xml)
    for spec in args.run:
        xml, sep, rc = spec.rpartition("=")
        if not sep:
            parser.error("--run wants XML=RC, got %r" % spec)
        try:
            rc = int(rc)
        except ValueError:
            parser.error("--run wants an integer exit status, got %r" % spec)
        base = os.path.basename(xml)
        origin = os.path.basename(os.path.dirname(xml)) if base == "test.xml" else os.path.splitext(base)[0]
        count_run(xml, rc, tally, origin)
    for spec in args.exit:
        name, sep, rc = spec.rpartition("=")
        if not sep or not rc.lstrip("-").isdigit():
            parser.error("--exit wants NAME=RC, got %r" % spec)
        if int(rc) == 0:
            tally.passed += 1
        elif int(rc) == 77:
            tally.skipped += 1
        else:
            tally.fail("%s (exit %s)" % (name, rc))
    filters = [f.strip() for f in args.test_tag_filters.split(",") if f.strip()]
    for bep in args.bep:
        try:
            count_bep(bep, filters, tally)
        except (OSError, ValueError) as e:
            tally.fail("%s (unreadable build event file: %s)" % (bep, e))
    tally.passed += args.passed
    tally.skipped += args.skipped
    for i in range(args.failed):
        tally.failures.append("(given on the command line)")
    tally.failed += args.failed

    if tally.failures and not args.quiet:
        for what in tally.failures:
            print("FAILED: %s" % what)
    print(tally.line())
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
