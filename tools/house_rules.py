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
- Layers: the engine's packages under graph/ (GRAPH_LAYERS, lowest first)
  include the headers of their own package or of a lower one, and graph/'s
  public root headers (the API's types); core/ allocator/ policy/ include
  nothing of graph/. A folder of graph/ not in the table is a problem too.
- Shared types: a struct or class of a private header under graph/**/internal/
  that another graph package includes has at most MAX_SHARED_FIELDS data
  members.
- Include guards: every C++ header guards itself with the name of the path
  it is included by (see guard_name); a header moved or renamed keeps no
  stale guard.
"""

import importlib.util
import os
import re

# The packages of the engine under graph/, lowest first. A file of a package
# may include (`#include "encore/graph/<pkg>/..."`) the headers of its own
# package and of the packages before it in the list, never after.
#   internal: the CUDA graph owners Graph/GraphExec, StreamCapture, messages
#   body:     the method's body, stages, constants and the runner of its stages
#   checks:   Call::Check
#   control:  conditional nodes, If/While
#   verify:   the constant guard, verified launches' device side
#   binding:  staged and direct forms, the variant cache, the reference scan
#   pad:      padding buckets and pad rows
#   store:    graph entries, the graph cache, the last launch, the launch
#   capture:  the capture pipeline, binding choice, the probe, verification, the graph memory budget
#   runtime:  the method instance, dispatcher, replay, precapture, If/While, the outcome ledger
# graph/'s root files (manager, method, call, method_report, method_spec) sit
# on top and may include anything; its root headers are the API's types,
# which any package may include.
GRAPH_LAYERS = ["internal", "body", "checks", "control", "verify", "binding", "pad", "store", "capture", "runtime"]
# Below graph/: none of their files includes encore/graph/...
BELOW_GRAPH = ("core", "allocator", "policy")
# The most data members of a type that graph packages share.
MAX_SHARED_FIELDS = 12
# Test-only files (tests, GPU tests, fixtures, test kernels and helpers) are
# exempt from the include direction: a test may reach into any package. A
# test-named header counts as test-only while no other file of graph/, core/,
# allocator/ or policy/ includes it. Test-named files do not make a type
# shared either.
TEST_NAME = re.compile(r"(_test\.cc|_test_kernels\.[a-z]+|_test_util\.h|fixture[^/]*)$")

LIBRARY_DIRS = ("core", "allocator", "graph", "policy", "shims", "interop")
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")
SOURCE_SUFFIXES = HEADER_SUFFIXES + (".cc", ".cpp", ".cu")
ENTRY_HEADERS = ("encore/encore.h", "encore/version.h", "encore/interop/nccl/nccl_consensus.h",
                 "encore/policy/nccl_consensus.h", "encore/interop/torch.h")
# Include paths whose file is not at the path less its `encore/`.
SPECIAL_PATHS = {
    "encore/interop/torch.h": "interop/torch/torch.h",
    "encore/policy/nccl_consensus.h": "interop/nccl/legacy/encore/policy/nccl_consensus.h",
    "encore/tools/arch_probe.h": "tools/testdata/arch_probe.h",
}
# Folders whose headers' guards are printed by the guard check but do not
# fail it (none: every header's guard is checked).
GUARD_REPORT_ONLY = ()
_GUARD = re.compile(r"^\s*#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+(\w+)", re.M)
_GUARD_END = re.compile(r"^\s*#\s*endif\s*//\s*(\w+)\s*\Z", re.M)
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*"(encore/[^"]+)"')

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


def _includes_of(repo, tops):
    """{repository path: [(line, "encore/..." include path)]} of the sources
    under the folders `tops`."""
    found = {}
    for top in tops:
        for dirpath, dirnames, filenames in os.walk(os.path.join(repo, top)):
            dirnames[:] = sorted(n for n in dirnames if not _skipped(n) and n != "testdata")
            for f in sorted(filenames):
                if not f.endswith(SOURCE_SUFFIXES):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), repo).replace(os.sep, "/")
                with open(os.path.join(repo, rel), encoding="utf-8", errors="replace") as src:
                    lines = src.read().split("\n")
                found[rel] = [(n, m.group(1)) for n, m in ((n, _INCLUDE_LINE.match(t)) for n, t in
                                                           enumerate(lines, 1)) if m]
    return found


def _test_only(includes):
    """The files of `includes` that only tests use (see TEST_NAME)."""
    named = {rel for rel in includes if TEST_NAME.search(rel)}
    used = {header_file(inc) for rel, incs in includes.items() if rel not in named for _, inc in incs}
    return {rel for rel in named if rel not in used}


def graph_package(rel):
    """The package of graph/'s file `rel`: "internal", "<pkg>", or "" for
    graph/'s root files."""
    parts = rel.split("/")
    return "" if len(parts) <= 2 else parts[1]


def _direction(rel, inc):
    """What is wrong with `rel` including `inc`, or None."""
    if not inc.startswith("encore/graph/"):
        return None
    if rel.split("/")[0] in BELOW_GRAPH:
        return "%s/ includes %s (core/, allocator/ and policy/ sit below graph/)" % (rel.split("/")[0], inc)
    src, dst = graph_package(rel), graph_package(header_file(inc))
    if not src or not dst or src == dst or src not in GRAPH_LAYERS:
        return None  # the root, the API's types, its own package; an unplaced folder is reported once
    if dst not in GRAPH_LAYERS:
        return "%s includes %s of %s, which is not in GRAPH_LAYERS" % (src, inc, dst)
    if GRAPH_LAYERS.index(dst) > GRAPH_LAYERS.index(src):
        return "%s (layer %d) includes %s of %s (layer %d): a package includes only its own and lower layers" % (
            src, GRAPH_LAYERS.index(src), inc, dst, GRAPH_LAYERS.index(dst))
    return None


def layer_problems(repo):
    """One line per folder of graph/ not in GRAPH_LAYERS and per include
    against the layers (see GRAPH_LAYERS, BELOW_GRAPH and TEST_NAME)."""
    out = []
    graph = os.path.join(repo, "graph")
    for pkg in sorted(os.listdir(graph)) if os.path.isdir(graph) else []:
        folder = os.path.join(graph, pkg)
        first = next((os.path.join(d, sorted(f)[0]) for d, _, f in sorted(os.walk(folder)) if f), None)
        if os.path.isdir(folder) and not _skipped(pkg) and pkg not in GRAPH_LAYERS and first:
            out.append("%s:1: package %s is not in GRAPH_LAYERS (tools/house_rules.py): place it among %s" % (
                os.path.relpath(first, repo).replace(os.sep, "/"), pkg, ", ".join(GRAPH_LAYERS)))
    includes = _includes_of(repo, ("graph",) + BELOW_GRAPH)
    tests = _test_only(includes)
    for rel in sorted(includes):
        for line, inc in includes[rel] if rel not in tests else []:
            problem = _direction(rel, inc)
            if problem:
                out.append("%s:%d: %s" % (rel, line, problem))
    return out


# Fields per shared type. The scan works on tools/bars.py's tokens (no
# comments, literals or preprocessor lines). In a class body, at its own
# brace depth, a declaration ending in `;` is a data member unless it is a
# function (a parameter list before any `=` or `{` initializer), a type
# (class/struct/union/enum, nested bodies skipped), or starts with using,
# typedef, friend, static, static_assert or template; `int a, b;` is two.
# Macro calls (an ALL_CAPS name and its parentheses, e.g. an X-macro
# expansion or an annotation) are skipped: what they declare is not counted.
_NOT_DATA = {"using", "typedef", "friend", "static", "static_assert", "template", "class", "struct", "union",
             "enum", "namespace"}
_INIT = ("init", "{}", 0)
_MACRO = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _bars():
    """tools/bars.py, beside this file: its C++ tokenizer."""
    spec = importlib.util.spec_from_file_location("bars", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                       "bars.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _skip_group(tokens, j, open_, close):
    """Index just past the group that opens with `open_` at tokens[j]."""
    depth = 0
    while j < len(tokens):
        depth += {open_: 1, close: -1}.get(tokens[j][1], 0)
        j += 1
        if depth <= 0:
            break
    return j


def type_definition(tokens, i):
    """(name index, `{` index) when the class/struct/union at tokens[i]
    starts a definition, else None."""
    if i > 0 and tokens[i - 1][1] in ("enum", "friend"):
        return None
    j = i + 1
    while j < len(tokens) and (tokens[j][1] in ("[", "alignas", "__attribute__", "__declspec") or
                               _MACRO.match(tokens[j][1]) and tokens[j + 1:j + 2] and tokens[j + 1][1] == "("):
        j = _skip_group(tokens, j, "[", "]") if tokens[j][1] == "[" else _skip_group(tokens, j + 1, "(", ")")
    if j >= len(tokens) or tokens[j][0] != "ident":
        return None
    name = j
    while tokens[j + 1:j + 3] and tokens[j + 1][1] == "::" and tokens[j + 2][0] == "ident":
        j += 2
    j += 1
    if j < len(tokens) and tokens[j][1] == "<":
        j = _skip_group(tokens, j, "<", ">")
    if j < len(tokens) and tokens[j][1] == "final":
        j += 1
    if j < len(tokens) and tokens[j][1] == ":":
        while j < len(tokens) and tokens[j][1] not in ("{", ";"):
            j += 1
    return (name, j) if j < len(tokens) and tokens[j][1] == "{" else None


def _declarators(bars, head):
    """How many data members the declaration `head` (its `;` left out) adds."""
    kept, j = [], 0
    while j < len(head):  # macro calls out
        if head[j][0] == "ident" and _MACRO.match(head[j][1]) and head[j + 1:j + 2] and head[j + 1][1] == "(":
            j = _skip_group(head, j + 1, "(", ")")
        else:
            kept.append(head[j])
            j += 1
    head = bars._strip_template_head(kept)
    if not head or head[0][1] in _NOT_DATA or head[0] == _INIT:
        return 1 if head and head[0] == _INIT and any(t[0] == "ident" for t in head[1:]) else 0
    top = list(bars._top_level(head))
    end = next((j for j, t in top if t == _INIT or t[1] == "=" and head[j - 1][1] != "operator"), len(head))
    if any(t[1] in _NOT_DATA for t in head[:end]) or bars._param_list_start(head[:end]) is not None:
        return 0
    return 1 + sum(1 for _, t in top if t[1] == ",")


def data_member_count(bars, tokens, open_i):
    """The data members of the class body whose `{` is tokens[open_i]."""
    close = bars._match(tokens, open_i)
    count, head, i = 0, [], open_i + 1
    while i < close:
        text = tokens[i][1]
        if text == ";":
            count += _declarators(bars, head)
            head = []
        elif text == ":" and head and head[-1][1] in ("public", "private", "protected"):
            head = []
        elif text == "{":
            end = bars._match(tokens, i)
            words = [t[1] for t in bars._strip_template_head(head)]
            what = bars.classify(head)[0]
            if words and words[0] in ("class", "struct", "union", "enum") and "=" not in words:
                head = [_INIT]  # a nested type: a member only if a name follows its body
            elif what == "member_init":
                head = head + tokens[i:end + 1]
            elif what == "function":
                head = []
            else:
                head = head + [_INIT]
            i = end
        else:
            head.append(tokens[i])
        i += 1
    return count


def types_in(text):
    """(name, line, data members) of each struct, class or union defined in
    C++ `text`; a nested one is named Outer::Inner."""
    bars = _bars()
    tokens = bars.tokenize(text)
    found, spans = [], []
    for i, tok in enumerate(tokens):
        d = tok[1] in ("class", "struct", "union") and type_definition(tokens, i)
        if not d:
            continue
        close = bars._match(tokens, d[1])
        outer = [n for o, c, n in spans if o < i < c]
        name = "::".join(outer[-1:] + [tokens[d[0]][1]])
        spans.append((d[1], close, name))
        found.append((name, tokens[d[0]][2], data_member_count(bars, tokens, d[1])))
    return found


def shared_type_problems(repo):
    """One line per type of a private header under graph/**/internal/ that
    another graph package includes, with over MAX_SHARED_FIELDS data members."""
    includes = _includes_of(repo, ("graph",))
    tests = {rel for rel in includes if TEST_NAME.search(rel)}
    sharers = {}
    for rel, incs in includes.items():
        for _, inc in incs if rel not in tests else []:
            header = header_file(inc)
            if header.startswith("graph/") and graph_package(rel) != graph_package(header):
                sharers.setdefault(header, set()).add(graph_package(rel) or "graph/'s root")
    out = []
    for header in sorted(h for h in sharers if "/internal/" in h and h in includes):
        with open(os.path.join(repo, header), encoding="utf-8", errors="replace") as f:
            for name, line, n in types_in(f.read()):
                if n > MAX_SHARED_FIELDS:
                    out.append("%s:%d: type %s has %d data members (limit %d), shared with %s" % (
                        header, line, name, n, MAX_SHARED_FIELDS, ", ".join(sorted(sharers[header]))))
    return out


def guard_name(rel):
    """The include guard of header `rel` (a repository path): ENCORE_ and the
    path it is included by, less `encore/` (SPECIAL_PATHS, else `rel`),
    upper-cased, every other character than a letter or a digit an
    underscore, and a trailing underscore. core/internal/log.h:
    ENCORE_CORE_INTERNAL_LOG_H_."""
    by_file = {f: inc[len("encore/"):] for inc, f in SPECIAL_PATHS.items()}
    return "ENCORE_" + re.sub(r"[^A-Za-z0-9]", "_", by_file.get(rel, rel)).upper() + "_"


def headers_in(repo):
    """Every C++ header of the repository (third_party/ and build outputs
    left out), as sorted repository paths."""
    found = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(n for n in dirnames if not _skipped(n))
        found += [os.path.relpath(os.path.join(dirpath, f), repo).replace(os.sep, "/") for f in filenames
                  if f.endswith(HEADER_SUFFIXES)]
    return sorted(found)


def guard_problems(repo):
    """(failing, reported only): one line per header whose #ifndef, #define
    or closing `#endif  // NAME` is not guard_name's."""
    failing, reported = [], []
    for rel in headers_in(repo):
        with open(os.path.join(repo, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        want, m, end = guard_name(rel), _GUARD.search(text), _GUARD_END.search(text.rstrip() + "\n")
        if m is None:
            line = "%s:1: no include guard (#ifndef %s / #define %s)" % (rel, want, want)
        elif m.group(1) != want or m.group(2) != want or (end is not None and end.group(1) != want):
            line = "%s:%d: include guard %s, which should be %s (tools/house_rules.py guard_name)" % (
                rel, text[:m.start(1)].count("\n") + 1, m.group(1), want)
        else:
            continue
        (reported if rel.startswith(GUARD_REPORT_ONLY) else failing).append(line)
    return failing, reported
