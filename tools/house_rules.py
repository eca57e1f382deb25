#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The house rules tools/bars.py checks beside its bars (Python 3, stdlib only):

- Headers: the headers outside an `internal/` folder of the library (the top
  level and core/ allocator/ graph/ policy/ shims/ interop/) are exactly the
  public ones: the closure, under their `#include "encore/..."` lines, of
  encore/encore.h, encore/version.h and the NCCL and PyTorch adapters' entry
  headers (what tools/cmake/public_headers.cmake installs, plus the PyTorch
  adapter's). A private header lives under `internal/`.
- Citations: no code comment, README.md, bench/README.md, docs/*.md or the
  newest section of CHANGELOG.md names a run by its letter, an issue by its
  number, a working session, or the removed benchmark notebook: say why,
  naming only what is in the repository.
"""

import os
import re

LIBRARY_DIRS = ("core", "allocator", "graph", "policy", "shims", "interop")
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")
ENTRY_HEADERS = ("encore/encore.h", "encore/version.h", "encore/interop/nccl/nccl_consensus.h",
                 "encore/policy/nccl_consensus.h", "encore/interop/torch.h")
# Include paths whose file is not at the path less its `encore/`.
SPECIAL_PATHS = {
    "encore/interop/torch.h": "interop/torch/torch.h",
    "encore/policy/nccl_consensus.h": "interop/nccl/legacy/encore/policy/nccl_consensus.h",
}
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)

# What a citation looks like. A run letter is followed by punctuation or
# "of" ("runs N steps" is a count, not a run); issues by number or "#N".
CITATIONS = (
    ("a run letter", re.compile(r"\b[Rr]uns? [A-Z]{1,2}(?:-[A-Z]{1,2})?\b(?! (?!of\b)[a-z])")),
    ("an issue number", re.compile(r"\b[Ii]ssues? #?[0-9]+|(?<![\w&#])#[0-9]+\b")),
    ("a session", re.compile(r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) session\b",
                             re.I)),
    ("the removed benchmark notebook", re.compile(r"bench/result[s]|RESULTS\.md")),
)
CODE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".py", ".sh", ".bzl", ".cmake", ".in")
CODE_NAMES = ("BUILD", "WORKSPACE", "CMakeLists.txt", "run_tests", "run_example")
SKIPPED_DIRS = {"third_party", "gpu_bin", "torch_build", "build"}


def _skipped(name):
    return name.startswith(".") or name.startswith("bazel-") or name in SKIPPED_DIRS


def header_file(inc):
    """The repository path of include path `inc` ("encore/core/status.h")."""
    return SPECIAL_PATHS.get(inc, inc[len("encore/"):] if inc.startswith("encore/") else inc)


def public_headers(repo):
    """The repository paths of the public headers (see the module's doc)."""
    seen, todo = set(), list(ENTRY_HEADERS)
    while todo:
        path = header_file(todo.pop())
        if path in seen or not os.path.isfile(os.path.join(repo, path)):
            continue  # a generated header (core/cuda_archs.h) has no file here
        seen.add(path)
        with open(os.path.join(repo, path), encoding="utf-8", errors="replace") as f:
            todo += [i for i in _INCLUDE.findall(f.read()) if i.startswith("encore/")]
    return seen


def headers_outside_internal(repo):
    """The library's headers not under an internal/ folder, as repository paths."""
    found = {f for f in os.listdir(repo) if f.endswith(HEADER_SUFFIXES)}
    for d in LIBRARY_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(repo, d)):
            dirnames[:] = [n for n in dirnames if n != "internal" and not _skipped(n) and n != "testdata"]
            rel = os.path.relpath(dirpath, repo)
            found |= {os.path.join(rel, f).replace(os.sep, "/") for f in filenames if f.endswith(HEADER_SUFFIXES)}
    return found


def header_problems(repo):
    """One line per header on the wrong side of internal/."""
    public, outside = public_headers(repo), headers_outside_internal(repo)
    lines = ["%s:1: a private header outside internal/ (no public header includes it): move it under "
             "internal/" % p for p in sorted(outside - public)]
    lines += ["%s:1: a public header under internal/" % p for p in sorted(public - outside)]
    return sorted(lines)


def newest_changelog_section(text):
    """The lines of CHANGELOG.md's first `## ` section, and its first line number."""
    lines = text.split("\n")
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    if not heads:
        return [], 1
    end = heads[1] if len(heads) > 1 else len(lines)
    return lines[heads[0]:end], heads[0] + 1


def citation_problems_in(display, lines, first_line=1):
    out = []
    for n, line in enumerate(lines, first_line):
        for what, pattern in CITATIONS:
            m = pattern.search(line)
            if m:
                out.append("%s:%d: cites %s (%r): say why instead" % (display, n, what, m.group(0)))
    return out


def cited_files(repo):
    """The code and documentation files the citation rule covers."""
    files = [f for f in ("README.md", "bench/README.md") if os.path.isfile(os.path.join(repo, f))]
    docs = os.path.join(repo, "docs")
    if os.path.isdir(docs):
        files += sorted("docs/" + f for f in os.listdir(docs) if f.endswith(".md"))
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(n for n in dirnames if not _skipped(n))
        for f in sorted(filenames):
            if f.endswith(CODE_SUFFIXES) or f in CODE_NAMES:
                files.append(os.path.relpath(os.path.join(dirpath, f), repo).replace(os.sep, "/"))
    return files


def citation_problems(repo):
    out = []
    for rel in cited_files(repo):
        with open(os.path.join(repo, rel), encoding="utf-8", errors="replace") as f:
            out += citation_problems_in(rel, f.read().split("\n"))
    changelog = os.path.join(repo, "CHANGELOG.md")
    if os.path.isfile(changelog):
        with open(changelog, encoding="utf-8") as f:
            lines, first = newest_changelog_section(f.read())
        out += citation_problems_in("CHANGELOG.md", lines, first)
    return out
