#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Joins bench/torch_aoti_bench's and bench/torch_aoti_cudagraph.py's JSON
into one Markdown table with the targets (encore auto's CPU time at
most 1.2x CUDAGraph.replay() alone and below replay + copy_; its end-to-end
time at most replay + copy_). tools/torch_suite.sh runs it; a module-free
script, not a benchmark.

    python3 bench/torch_aoti_table.py CPP.json [PY.json ...] > table.md
"""

import json
import sys


def main():
    rows, bodies = [], []
    for i, path in enumerate(sys.argv[1:]):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print("torch_aoti_table: cannot read %s: %s" % (path, e), file=sys.stderr)
            continue
        src = "C++" if i == 0 else "Python"
        bodies.append("%s: %s" % (src, data.get("body", "?")))
        for name, t in data.get("variants", {}).items():
            rows.append((src, name, t["cpu_us"], t["e2e_us"]))
    print("| source | variant, per call | CPU µs | end-to-end µs |")
    print("|---|---|---|---|")
    for src, name, cpu, e2e in rows:
        print("| %s | %s | %.2f | %.2f |" % (src, name, cpu, e2e))
    print()
    for b in bodies:
        print("- " + b)
    find = {(s, n): (c, e) for s, n, c, e in rows}
    enc = find.get(("C++", "encore auto"))
    for src, suffix in (("C++", ""), ("Python", " (Python)")):
        replay = find.get((src, "CUDAGraph replay alone" + suffix))
        copy = find.get((src, "CUDAGraph copy_ + replay + copy_" + suffix))
        if enc and replay and copy:
            print("- targets against %s's CUDAGraph: CPU %.2f us vs 1.2 x replay %.2f = %.2f: %s; CPU below replay+copy_ %.2f: %s; "
                  "end-to-end %.2f vs replay+copy_ %.2f: %s" % (
                      src, enc[0], replay[0], 1.2 * replay[0], "met" if enc[0] <= 1.2 * replay[0] else "missed",
                      copy[0], "met" if enc[0] < copy[0] else "missed", enc[1], copy[1],
                      "met" if enc[1] <= copy[1] else "missed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
