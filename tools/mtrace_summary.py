#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bytes glibc's mtrace log shows allocated and never freed, by the mapped
file their caller lives in (/proc/<pid>/maps of the same run).

  tools/mtrace_summary.py TRACE MAPS
"""
import re
import sys


def main(trace_path, maps_path):
    maps = []
    for line in open(maps_path):
        parts = line.split()
        lo, hi = (int(x, 16) for x in parts[0].split('-'))
        maps.append((lo, hi, parts[5] if len(parts) > 5 else '[anon]'))
    live = {}
    # glibc writes the caller as "FILE:[OFFSET]" or "FILE:(SYMBOL+OFF)[OFFSET]"
    # (OFFSET from FILE's load address) when it knows the file, else "[ADDRESS]".
    pat = re.compile(r'@ (?:(\S*?):(?:\([^)]*\))?)?\[(0x[0-9a-f]+)\] ([+<>-]) (0x[0-9a-f]+)(?: (0x[0-9a-f]+))?')
    for line in open(trace_path, errors='replace'):
        m = pat.search(line)
        if not m:
            continue
        where, caller = m.group(1), int(m.group(2), 16)
        op, addr, size = m.group(3), m.group(4), m.group(5)
        if op == '+':
            live[addr] = (where, caller, int(size, 16) if size else 0)
        elif op == '-':
            live.pop(addr, None)
        elif op in '<>':  # realloc: '<' old, '>' new
            if op == '<':
                live.pop(addr, None)
            else:
                live[addr] = (where, caller, int(size, 16) if size else 0)
    by_file, by_site = {}, {}
    for where, caller, size in live.values():
        if where:  # an offset in that file already
            lo, name = 0, where
        else:
            lo, name = next(((lo, f) for lo, hi, f in maps if lo <= caller < hi), (0, '?'))
        n, b = by_file.get(name, (0, 0))
        by_file[name] = (n + 1, b + size)
        site = (name, caller - lo)  # addr2line -e FILE OFFSET
        n, b = by_site.get(site, (0, 0))
        by_site[site] = (n + 1, b + size)
    for name, (n, b) in sorted(by_file.items(), key=lambda kv: -kv[1][1]):
        print(f'{b:12d} bytes in {n:7d} blocks never freed, allocated from {name}')
    for (name, off), (n, b) in sorted(by_site.items(), key=lambda kv: -kv[1][1])[:15]:
        print(f'  {b:10d} bytes in {n:6d} blocks from {name} +{off:#x}')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
