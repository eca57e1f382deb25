#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Names the stacks tools/cpu_sampler.cc wrote, from the binary's symbols (nm).

  cpu_sampler_report.py PROFILE BINARY [--module NAME] [--top N]

BINARY is the unstripped build of the profiled executable (bazel-bin/...);
its frames are named, frames in other modules are shown as module+offset.
Prints the functions with the most samples where the CPU was (self) and
anywhere on the stack (inclusive), as shares of all samples.
"""
import argparse
import bisect
import collections
import os
import subprocess
import sys


def parse(path):
    maps, stacks = [], []
    for line in open(path):
        if line.startswith("map "):
            f = line[4:].split()
            if len(f) < 6 or "x" not in f[1]:
                continue
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            maps.append((lo, hi, int(f[2], 16), f[5]))
        elif line.startswith("stack"):
            stacks.append([int(x, 16) for x in line.split()[1:]])
    maps.sort()
    return maps, stacks


def locate(maps, starts, pc):
    i = bisect.bisect_right(starts, pc) - 1
    if i < 0 or pc >= maps[i][1]:
        return None, pc
    lo, _, off, path = maps[i]
    return path, pc - lo + off


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("binary")
    ap.add_argument("--module", help="the profiled executable's name in the maps (default: BINARY's base name)")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    module = a.module or os.path.basename(a.binary)
    maps, stacks = parse(a.profile)
    starts = [m[0] for m in maps]
    frames = []  # per stack: list of (module, offset)
    ours = set()
    for st in stacks:
        fr = []
        for d, pc in enumerate(st):
            path, off = locate(maps, starts, pc if d == 0 else pc - 1)
            fr.append((path, off))
            if path and os.path.basename(path) == module:
                ours.add(off)
        frames.append(fr)
    names = {}
    if ours:
        # The builds carry no debug info (-g0): function symbols name the frames.
        syms = []
        nm = subprocess.run(["nm", "-C", "-n", "--defined-only", a.binary], capture_output=True, text=True,
                            check=True).stdout.splitlines()
        for line in nm:
            f = line.split(" ", 2)
            if len(f) == 3 and f[1] in "tTwW":
                syms.append((int(f[0], 16), f[2]))
        addrs = [s[0] for s in syms]
        for o in ours:
            i = bisect.bisect_right(addrs, o) - 1
            names[o] = syms[i][1] if i >= 0 else "?"

    def name(path, off):
        if path is None:
            return "?"
        base = os.path.basename(path)
        if base == module:
            return names.get(off, "?")
        return base

    self_c, incl = collections.Counter(), collections.Counter()
    total = 0
    for fr in frames:
        # Past the handler and the kernel's signal trampoline.
        at = next((i for i, (p, _) in enumerate(fr) if p and "libc" in os.path.basename(p) and i > 0), None)
        named = [name(p, o) for p, o in fr]
        body = named[at + 1:] if at is not None else named
        body = [n for n in body if n != "cpu_sampler.so"]
        if not body:
            continue
        total += 1
        self_c[body[0]] += 1
        for n in set(body):
            incl[n] += 1
    if total == 0:
        print("no samples")
        return 1
    print(f"{total} samples")
    print("self:")
    for n, c in self_c.most_common(a.top):
        print(f"  {100.0 * c / total:6.2f}%  {n}")
    print("inclusive:")
    for n, c in incl.most_common(a.top):
        print(f"  {100.0 * c / total:6.2f}%  {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
