#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The house bars: no library file over 400 lines, no function over 60.

  python3 tools/bars.py [--max-file-lines N] [--max-function-lines N] [PATH...]

With no PATH it also checks the house rules of tools/house_rules.py: the
headers outside internal/ are exactly the public ones, no code or doc cites
a run, an issue or a session, graph/'s packages include only downwards
(GRAPH_LAYERS), no type they share has over 12 data members, and every
header's include guard is the one its path gives (python/'s are printed
without failing). With
--layers-report-only (or ENCORE_LAYERS_REPORT_ONLY=1) the last two are
printed but do not fail.

With no PATH, checks the library: the C++ and CUDA sources and headers under
core/ allocator/ graph/ policy/ shims/ interop/ and the top-level headers,
tests, benchmarks, examples and third_party/ left out. A PATH that is a
folder is walked with the same exclusions; a PATH that is a file is checked
whatever its name. Prints one line per file or function over its bar,
  path:line: function NAME is N lines (limit 60)
and exits 1 if there was any, else 0.

A function's length counts the lines from the end of its signature (the line
the body's `{` follows) to its closing brace, both included; lambdas and
local classes count within the function that holds them. The scanner skips
comments, string and character literals (raw strings included) and
preprocessor lines, so braces in them do not count. Python 3, stdlib only.
"""

import argparse
import os
import re
import sys

LIBRARY_DIRS = ("core", "allocator", "graph", "policy", "shims", "interop")
SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh")
EXCLUDED_DIRS = {"tests", "bench", "examples", "third_party", "testdata"}
EXCLUDED_NAME = re.compile(r"(_test\.cc|_gpu_test\.cc|_test_kernels\.[A-Za-z]+)$")

# Tokens: one of these kinds, its text, the line it starts on.
IDENT, NUMBER, LITERAL, PUNCT = "ident", "number", "literal", "punct"
_PUNCT3 = {"<<=", ">>=", "->*", "...", "<=>"}
_PUNCT2 = {"::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
           "%=", "&=", "|=", "^=", ".*", "##"}
_LITERAL_PREFIXES = {"u8", "u", "U", "L"}
_RAW_PREFIXES = {"R", "u8R", "uR", "UR", "LR"}


def _skip_quoted(text, i, quote):
    """Index just past the literal whose opening `quote` is at text[i]."""
    i += 1
    while i < len(text) and text[i] != quote and text[i] != "\n":
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _skip_raw(text, i):
    """Index just past the raw string R"delim(...)delim" whose `"` is at text[i]."""
    open_paren = text.find("(", i)
    if open_paren < 0:
        return len(text)
    delim = text[i + 1:open_paren]
    end = text.find(")" + delim + '"', open_paren)
    return len(text) if end < 0 else end + len(delim) + 2


def tokenize(text):
    """The tokens of C++ `text`, without comments and preprocessor lines."""
    tokens = []
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        start, start_line = i, line
        if c == "#" and at_line_start:
            # A directive, continued by backslash-newlines: a macro body's
            # braces are not code.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and text[i + 1:i + 2] == "\n":
                    line += 1
                    i += 1
                i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            line += text.count("\n", start, i)
            continue
        if c.isalpha() or c == "_":
            m = re.compile(r"[A-Za-z_0-9]*").match(text, i)
            word = m.group(0)
            i = m.end()
            if i < n and text[i] == '"' and word in _RAW_PREFIXES:
                i = _skip_raw(text, i)
            elif i < n and text[i] in "\"'" and word in _LITERAL_PREFIXES:
                i = _skip_quoted(text, i, text[i])
            else:
                tokens.append((IDENT, word, start_line))
                continue
            tokens.append((LITERAL, text[start:i], start_line))
            line += text.count("\n", start, i)
            continue
        if c.isdigit() or (c == "." and text[i + 1:i + 2].isdigit()):
            # A pp-number, digit separators (1'000) and exponents included.
            m = re.compile(r"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*").match(text, i)
            i = m.end()
            tokens.append((NUMBER, m.group(0), start_line))
            continue
        if c in "\"'":
            i = _skip_quoted(text, i, c)
            tokens.append((LITERAL, text[start:i], start_line))
            continue
        for width, table in ((3, _PUNCT3), (2, _PUNCT2)):
            if text[i:i + width] in table:
                tokens.append((PUNCT, text[i:i + width], start_line))
                i += width
                break
        else:
            tokens.append((PUNCT, c, start_line))
            i += 1
    return tokens


def _strip_template_head(head):
    """`head` without leading `template <...>` clauses."""
    while len(head) >= 2 and head[0][1] == "template" and head[1][1] == "<":
        depth, j = 0, 1
        while j < len(head):
            t = head[j][1]
            depth += {"<": 1, ">": -1, ">>": -2}.get(t, 0)
            j += 1
            if depth <= 0:
                break
        head = head[j:]
    return head


_NOT_NAMES = {"decltype", "alignas", "__attribute__", "__declspec", "noexcept", "sizeof", "requires", "throw"}


def _top_level(head):
    """(index, token) of the tokens of `head` outside (), [] and <>."""
    depth = angle = 0
    for j, tok in enumerate(head):
        text = tok[1]
        at_top = depth == 0 and angle == 0
        if text in ("(", "["):
            depth += 1
        elif text in (")", "]"):
            depth -= 1
        elif depth == 0 and text == "<" and j > 0 and head[j - 1][0] == IDENT and head[j - 1][1] != "operator":
            angle += 1
        elif depth == 0 and angle and text in (">", ">>"):
            angle = max(0, angle - len(text))
        if at_top:
            yield j, tok


def _param_list_start(head):
    """Index in `head` of the `(` that opens the parameter list, or None."""
    for j, (kind, text, _) in _top_level(head):
        if text == "operator":
            # operator()(...): the first () is the name; else the next (.
            if head[j + 1:j + 3] and [t[1] for t in head[j + 1:j + 3]] == ["(", ")"]:
                return j + 3 if j + 3 < len(head) and head[j + 3][1] == "(" else None
            return next((k for k in range(j + 1, len(head)) if head[k][1] == "("), None)
        if text == "(" and j > 0 and head[j - 1][0] == IDENT and head[j - 1][1] not in _NOT_NAMES:
            return j
    return None


def _function_name(head, paren):
    """The qualified name before head[paren] (`Manager::Create`,
    `Foo::operator==`) and the index of its first token."""
    op = next((k for k in range(paren - 1, -1, -1) if head[k][1] == "operator"), None)
    j = op - 1 if op is not None else paren - 2  # else head[paren - 1] is the name
    if j >= 0 and head[j][1] == "~":
        j -= 1
    while j >= 1 and head[j][1] == "::":
        prev = head[j - 1]
        if prev[1] in (">", ">>"):
            # Foo<T>::Bar: back to the `<` of the template arguments.
            depth, k = 0, j - 1
            while k >= 0:
                depth += {">": 1, ">>": 2, "<": -1}.get(head[k][1], 0)
                if depth <= 0:
                    break
                k -= 1
            j = k - 2
        elif prev[0] == IDENT:
            j -= 2
        else:
            break
    first = j + 1
    return "".join(t[1] for t in head[first:paren]), first


def _body_opens_here(head, paren):
    """Whether the `{` after `head` opens the body of the function whose
    parameter list starts at head[paren], not a member's brace initializer
    in a constructor's initializer list (`: a_{1}, b_(2) {`)."""
    depth, j = 0, paren
    while j < len(head):
        depth += {"(": 1, ")": -1}.get(head[j][1], 0)
        j += 1
        if depth == 0:
            break
    rest = head[j:]
    if not any(t[1] == ":" for t in rest):
        return True
    last = head[-1]
    return last[1] in (")", "}", "...")


def classify(head):
    """What a `{` after the declaration tokens `head` opens: "function",
    "scope" (namespace, class, extern "C": scanned for functions) or
    "data" (an initializer, an enum: skipped)."""
    head = _strip_template_head(head)
    words = [t[1] for t in head]
    if not words:
        return "data", None
    if "namespace" in words[:3] or words[0] == "extern":
        return "scope", None
    paren = _param_list_start(head)
    first_eq = next((k for k, w in enumerate(words) if w == "=" and (k == 0 or words[k - 1] != "operator")), None)
    if paren is not None and (first_eq is None or first_eq > paren):
        return ("function", paren) if _body_opens_here(head, paren) else ("member_init", paren)
    lead = [w for w in words if w not in ("typedef", "[[", "]]")]
    if lead and lead[0] in ("class", "struct", "union") and "=" not in words:
        return "scope", None
    return "data", None


def _match(tokens, i):
    """Index of the `}` that closes the `{` at tokens[i]."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j][1] == "{":
            depth += 1
        elif tokens[j][1] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def functions(tokens):
    """(name, line of the name, body length in lines) of every function."""
    out = []
    head = []
    i = 0
    while i < len(tokens):
        kind, text, line = tokens[i]
        if text in (";", "}"):
            head = []
        elif text == ":" and head and head[-1][1] in ("public", "private", "protected"):
            head = []
        elif text == "{":
            what = classify(head)
            if what[0] == "scope":
                head = []
            elif what[0] == "member_init":
                # `a_{1}` in an initializer list: part of the signature.
                close = _match(tokens, i)
                head = head + tokens[i:close + 1]
                i = close + 1
                continue
            else:
                close = _match(tokens, i)
                if what[0] == "function":
                    h = _strip_template_head(head)
                    name, name_at = _function_name(h, what[1])
                    signature_end = head[-1][2] if head else line
                    out.append((name, h[name_at][2] if name_at < len(h) else line,
                                tokens[close][2] - signature_end + 1))
                head = []
                i = close + 1
                continue
        else:
            head.append(tokens[i])
        i += 1
    return out


def line_count(text):
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def is_excluded(relpath):
    parts = relpath.replace(os.sep, "/").split("/")
    if any(p in EXCLUDED_DIRS or p.startswith(".") or p.startswith("bazel-") for p in parts[:-1]):
        return True
    return bool(EXCLUDED_NAME.search(parts[-1])) or not parts[-1].endswith(SOURCE_SUFFIXES)


def walk(root):
    """The sources under `root` the bars apply to, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for f in filenames:
            path = os.path.join(dirpath, f)
            if not is_excluded(os.path.relpath(path, root)):
                found.append(path)
    return sorted(found)


def library_files(repo):
    files = [os.path.join(repo, f) for f in sorted(os.listdir(repo))
             if f.endswith(".h") and os.path.isfile(os.path.join(repo, f))]
    for d in LIBRARY_DIRS:
        if os.path.isdir(os.path.join(repo, d)):
            files += walk(os.path.join(repo, d))
    return files


def check(path, display, max_file, max_function):
    """The lines to print for one file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    problems = []
    n = line_count(text)
    if n > max_file:
        problems.append("%s:1: file is %d lines (limit %d)" % (display, n, max_file))
    for name, line, length in functions(tokenize(text)):
        if length > max_function:
            problems.append("%s:%d: function %s is %d lines (limit %d)" % (display, line, name, length,
                                                                            max_function))
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-file-lines", type=int, default=400)
    parser.add_argument("--max-function-lines", type=int, default=60)
    parser.add_argument("--layers-report-only", action="store_true",
                        default=os.environ.get("ENCORE_LAYERS_REPORT_ONLY", "") not in ("", "0"))
    parser.add_argument("paths", nargs="*", help="files or folders (default: the library)")
    args = parser.parse_args(argv)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args.paths:
        files = []
        for p in args.paths:
            if os.path.isdir(p):
                files += walk(p)
            elif os.path.isfile(p):
                files.append(p)
            else:
                parser.error("no such file or folder: %s" % p)
        shown = files
    else:
        files = library_files(repo)
        shown = [os.path.relpath(f, repo) for f in files]
    problems = []
    for path, display in zip(files, shown):
        problems += check(path, display, args.max_file_lines, args.max_function_lines)
    for p in problems:
        print(p)
    print("bars: %d files, %d over (files <= %d lines, functions <= %d)" %
          (len(files), len(problems), args.max_file_lines, args.max_function_lines), file=sys.stderr)
    if not args.paths:
        problems += house_rules_problems(repo, not args.layers_report_only)
    return 1 if problems else 0


def house_rules_problems(repo, layers_fail=True):
    """tools/house_rules.py's checks of the whole repository, printed; those
    that fail (the layer checks only if `layers_fail`)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import house_rules  # noqa: E402 (beside this file)
    headers = house_rules.header_problems(repo)
    citations = house_rules.citation_problems(repo)
    layers = house_rules.layer_problems(repo) + house_rules.shared_type_problems(repo)
    guards, guards_reported = house_rules.guard_problems(repo)
    for p in headers + citations + layers + guards + guards_reported:
        print(p)
    print("house: %d public headers, %d headers on the wrong side of internal/, %d citations, %d layer problems%s, "
          "%d stale include guards (and %d reported only)" %
          (len(house_rules.public_headers(repo)), len(headers), len(citations), len(layers),
           "" if layers_fail else " (reported only)", len(guards), len(guards_reported)), file=sys.stderr)
    return headers + citations + (layers if layers_fail else []) + guards


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
