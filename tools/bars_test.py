#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/bars.py on small synthetic files: over and under the bars, braces
that are not code, and the exit status.
  python3 tools/bars_test.py [PATH/TO/bars.py]"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

BARS = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "bars.py"))
_spec = importlib.util.spec_from_file_location("bars", BARS)
bars = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bars)


def body(n, text="  x += 1;\n"):
    """A function body of exactly `n` lines, signature and `}` included."""
    return "{\n" + text * (n - 2) + "}\n"


def lengths(source):
    return {name: length for name, _, length in bars.functions(bars.tokenize(source))}


class FunctionLengthTest(unittest.TestCase):
    def test_counts_from_the_signature_end_to_the_closing_brace(self):
        src = "int f(int x) " + body(60) + "\nint g(int x) " + body(61) + "int h() { return 1; }\n"
        self.assertEqual(lengths(src), {"f": 60, "g": 61, "h": 1})

    def test_a_signature_over_several_lines_counts_from_its_last_line(self):
        src = "int f(int a,\n      int b,\n      int c) " + body(10)
        self.assertEqual(lengths(src), {"f": 10})

    def test_braces_in_comments_strings_chars_and_raw_strings_are_not_code(self):
        src = ('void f() {\n'
               '  // } a comment {\n'
               '  /* } { } */\n'
               '  const char* s = "}}} \\" {";\n'
               '  char c = \'}\', d = \'\\\'\';\n'
               '  const char* r = R"x(} )" })x";\n'
               '  const char* u = u8R"(})";\n'
               '  int n = 1\'000\'000;\n'
               '#define OPEN {\n'
               '}\n'
               'void g() {}\n')
        self.assertEqual(lengths(src), {"f": 10, "g": 1})

    def test_lambdas_and_local_classes_count_within_their_function(self):
        src = "void f() {\n  auto l = [](int x) {\n" + "    x++;\n" * 60 + "  };\n  struct L { void m() {} };\n}\n"
        self.assertEqual(lengths(src), {"f": 65})

    def test_names_of_members_constructors_operators_and_templates(self):
        src = ("namespace a::b {\n"
               "Foo::Foo(int a) : a_{a}, b_(a), c_{} " + body(3) +
               "Foo::~Foo() {}\n"
               "bool Foo::operator==(const Foo& o) const { return true; }\n"
               "int Foo::operator()(int x) const noexcept { return x; }\n"
               "template <class T, int N = 2>\nT Bar<T>::Get() const { return {}; }\n"
               "auto Foo::Make() -> std::vector<int> " + body(4) +
               "class Baz : public Foo {\n public:\n  int Size() const { return 0; }\n"
               "  std::function<void(int)> f_{[](int) {}};\n"
               "  std::array<int, 2> a_{1, 2};\n};\n"
               "}  // namespace a::b\n")
        self.assertEqual(lengths(src), {"Foo::Foo": 3, "Foo::~Foo": 1, "Foo::operator==": 1,
                                        "Foo::operator()": 1, "Bar<T>::Get": 1, "Foo::Make": 4, "Size": 1})

    def test_initializers_enums_and_extern_blocks_are_not_functions(self):
        src = ('extern "C" {\nint c_api(void) { return 0; }\n}\n'
               "enum class E { kA, kB };\n"
               "constexpr int kTable[] = {1, 2, 3};\n"
               "const auto kLambda = [](int x) { return x; };\n"
               "struct S { int v = 1; } kS{2};\n")
        self.assertEqual(lengths(src), {"c_api": 1})


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name

    def tearDown(self):
        self._dir.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_bars(self, *args):
        r = subprocess.run([sys.executable, BARS] + list(args), capture_output=True, text=True)
        return r.returncode, r.stdout.splitlines()

    def test_under_the_bars_prints_nothing_and_exits_0(self):
        self.write("lib/ok.cc", "int f() " + body(60) + "\n" * 300)
        self.assertEqual(self.run_bars(os.path.join(self.dir, "lib")), (0, []))

    def test_over_the_bars_names_the_function_and_the_file_and_exits_1(self):
        long_file = self.write("lib/long.cc", "// x\n" * 401)
        long_fn = self.write("lib/fn.h", "#pragma once\n\ninline int Sum(int x) " + body(61))
        rc, out = self.run_bars(os.path.join(self.dir, "lib"))
        self.assertEqual(rc, 1)
        self.assertEqual(out, [long_fn + ":3: function Sum is 61 lines (limit 60)",
                               long_file + ":1: file is 401 lines (limit 400)"])

    def test_flags_move_the_bars(self):
        path = self.write("lib/a.cc", "void f() " + body(20) + "// x\n" * 30)
        self.assertEqual(self.run_bars("--max-function-lines", "20", "--max-file-lines", "50", path), (0, []))
        rc, out = self.run_bars("--max-function-lines=19", "--max-file-lines=49", path)
        self.assertEqual((rc, out), (1, [path + ":1: file is 50 lines (limit 49)",
                                         path + ":1: function f is 20 lines (limit 19)"]))

    def test_tests_and_other_folders_are_left_out_of_a_walk(self):
        long_fn = "void f() " + body(70)
        for rel in ("lib/a_test.cc", "lib/a_gpu_test.cc", "lib/a_test_kernels.cu", "lib/tests/a.cc",
                    "lib/bench/a.cc", "lib/examples/a.cc", "lib/third_party/a.cc", "lib/notes.txt"):
            self.write(rel, long_fn)
        kernel = self.write("lib/k.cu", "__global__ void Kernel(float* x) " + body(70))
        rc, out = self.run_bars(os.path.join(self.dir, "lib"))
        self.assertEqual((rc, out), (1, [kernel + ":1: function Kernel is 70 lines (limit 60)"]))
        # A file named on the command line is checked whatever its name.
        rc, out = self.run_bars(os.path.join(self.dir, "lib/a_test.cc"))
        self.assertEqual(rc, 1)

    def test_a_missing_path_is_a_usage_error(self):
        rc, _ = self.run_bars(os.path.join(self.dir, "nothing_here"))
        self.assertEqual(rc, 2)


_house_spec = importlib.util.spec_from_file_location("house_rules", os.path.join(os.path.dirname(BARS),
                                                                               "house_rules.py"))
house = importlib.util.module_from_spec(_house_spec)
_house_spec.loader.exec_module(house)


class HouseRulesTest(CommandLineTest):
    def test_headers_outside_internal_are_exactly_the_public_closure(self):
        self.write("encore.h", '#include "encore/core/status.h"\n')
        self.write("version.h", "#define V 1\n")
        self.write("core/status.h", '#include "encore/core/tensor.h"\n#include <vector>\n')
        self.write("core/tensor.h", "")
        self.write("core/internal/log.h", '#include "encore/core/status.h"\n')
        self.assertEqual(house.header_problems(self.dir), [])
        self.assertEqual(house.public_headers(self.dir), {"encore.h", "version.h", "core/status.h", "core/tensor.h"})
        self.write("core/cuda_api.h", "")  # private, but outside internal/
        self.write("tests/helper.h", "")   # not a library folder
        self.write("core/internal/tensor_view.h", "")
        self.write("core/status.h", '#include "encore/core/internal/tensor_view.h"\n')
        self.assertEqual(house.header_problems(self.dir), [
            "core/cuda_api.h:1: a private header outside internal/ (no public header includes it): move it "
            "under internal/",
            "core/internal/tensor_view.h:1: a public header under internal/",
            "core/tensor.h:1: a private header outside internal/ (no public header includes it): move it "
            "under internal/"])  # sorted by path

    def test_citations_of_runs_issues_and_sessions_are_found(self):
        run, issue = "ru" + "n", "iss" + "ue"
        lines = [
            "// measured with bench/binding_micro; see docs/performance.md",
            "// %s N steps of the same work, then %s a loop" % (run, run),
            "// the floor read +3 us (%s W: on the next 4 KiB)" % run,
            "// %ss O-V's +10 us" % run,
            "// %s AB) found it" % run,
            "// %s X of the third folder" % run,
            "// as %s 26 asks" % issue,
            "// fixed in " + "#" + "23 and &#38; is not one",
            "// the eighth " + "session measured it",
        ]
        got = house.citation_problems_in("a.cc", lines)
        self.assertEqual([g.split(": cites ")[0] for g in got], ["a.cc:%d" % n for n in (3, 4, 5, 6, 7, 8, 9)])
        self.assertIn("a run letter ('%ss O-V')" % run, got[1])

    def test_only_the_newest_changelog_section_counts(self):
        old = "ru" + "n Q"
        self.write("CHANGELOG.md", "# Changelog\n\n## [Unreleased]\n\n- clean\n\n## [0.1.0]\n\n- %s\n" % old)
        self.write("docs/notes.md", "nothing cited\n")
        self.write("lib/a.py", "# fixed after %s.\n" % old)
        self.assertEqual(house.citation_problems(self.dir),
                         ["lib/a.py:1: cites a run letter ('%s'): say why instead" % old])


class GuardTest(CommandLineTest):
    def guarded(self, name, body=""):
        return "// SPDX-License-Identifier: Apache-2.0\n#ifndef %s\n#define %s\n%s\n#endif  // %s\n" % (
            name, name, body, name)

    def test_guards_follow_the_path_a_header_is_included_by(self):
        self.assertEqual(house.guard_name("core/internal/log.h"), "ENCORE_CORE_INTERNAL_LOG_H_")
        self.assertEqual(house.guard_name("graph/pad/internal/pad-rows.cuh"), "ENCORE_GRAPH_PAD_INTERNAL_PAD_ROWS_CUH_")
        self.assertEqual(house.guard_name("interop/torch/torch.h"), "ENCORE_INTEROP_TORCH_H_")  # encore/interop/torch.h
        self.write("core/internal/log.h", self.guarded("ENCORE_CORE_INTERNAL_LOG_H_"))
        self.write("interop/torch/torch.h", self.guarded("ENCORE_INTEROP_TORCH_H_"))
        self.write("third_party/x.h", "#pragma once\n")
        self.write("core/log.cc", "int x;\n")
        self.assertEqual(house.guard_problems(self.dir), ([], []))

    def test_stale_and_missing_guards_fail_python_included(self):
        self.write("core/internal/log.h", self.guarded("ENCORE_CORE_LOG_H_"))  # moved under internal/
        self.write("core/a.h", "#pragma once\n")
        end = self.guarded("ENCORE_CORE_B_H_").replace("#endif  // ENCORE_CORE_B_H_", "#endif  // ENCORE_CORE_C_H_")
        self.write("core/b.h", end)
        self.write("python/src/py.h", self.guarded("ENCORE_PYTHON_PY_H_"))
        failing, reported = house.guard_problems(self.dir)
        self.assertEqual(failing, [
            "core/a.h:1: no include guard (#ifndef ENCORE_CORE_A_H_ / #define ENCORE_CORE_A_H_)",
            "core/b.h:2: include guard ENCORE_CORE_B_H_, which should be ENCORE_CORE_B_H_ (tools/house_rules.py "
            "guard_name)",
            "core/internal/log.h:2: include guard ENCORE_CORE_LOG_H_, which should be ENCORE_CORE_INTERNAL_LOG_H_ "
            "(tools/house_rules.py guard_name)",
            "python/src/py.h:2: include guard ENCORE_PYTHON_PY_H_, which should be ENCORE_PYTHON_SRC_PY_H_ "
            "(tools/house_rules.py guard_name)"])
        self.assertEqual(reported, [])


def includes(*paths):
    return "".join('#include "encore/%s"\n' % p for p in paths)


class LayersTest(CommandLineTest):
    def test_packages_include_their_own_and_lower_layers_and_the_api(self):
        self.write("graph/call.h", "")
        self.write("graph/internal/graph.h", includes("graph/call.h"))
        self.write("graph/body/internal/method_body.h", includes("graph/internal/graph.h", "graph/call.h"))
        self.write("graph/capture/capture.cc", includes("graph/body/internal/method_body.h", "core/status.h"))
        self.write("graph/manager.cc", includes("graph/capture/internal/capture.h"))
        self.write("core/status.h", includes("core/internal/log.h"))
        self.assertEqual(house.layer_problems(self.dir), [])

    def test_upward_includes_unplaced_folders_and_includes_from_below_graph(self):
        self.write("graph/body/body.cc", "\n" + includes("graph/capture/internal/capture.h"))
        self.write("graph/checks/internal/check.h", includes("graph/engine/internal/dispatcher.h"))
        self.write("graph/engine/internal/dispatcher.h", includes("graph/runtime/internal/x.h"))
        self.write("policy/vote.cc", includes("graph/call.h"))
        self.assertEqual(house.layer_problems(self.dir), [
            "graph/engine/internal/dispatcher.h:1: package engine is not in GRAPH_LAYERS (tools/house_rules.py): "
            "place it among " + ", ".join(house.GRAPH_LAYERS),
            "graph/body/body.cc:2: body (layer 1) includes encore/graph/capture/internal/capture.h of capture "
            "(layer 8): a package includes only its own and lower layers",
            "graph/checks/internal/check.h:1: checks includes encore/graph/engine/internal/dispatcher.h of engine, "
            "which is not in GRAPH_LAYERS",
            "policy/vote.cc:1: policy/ includes encore/graph/call.h (core/, allocator/ and policy/ sit below graph/)"])

    def test_test_only_files_may_include_upwards(self):
        upward = includes("graph/runtime/internal/instance.h")
        for rel in ("graph/body/a_test.cc", "graph/body/a_gpu_test.cc", "graph/body/internal/body_fixture.h",
                    "graph/body/a_test_kernels.cu", "allocator/arena_gpu_test.cc"):
            self.write(rel, upward + includes("graph/body/internal/body_fixture.h"))
        self.assertEqual(house.layer_problems(self.dir), [])
        # A fixture that library code includes is not test-only any more.
        self.write("graph/body/runner.cc", includes("graph/body/internal/body_fixture.h"))
        self.assertEqual(house.layer_problems(self.dir), [
            "graph/body/internal/body_fixture.h:1: body (layer 1) includes encore/graph/runtime/internal/instance.h"
            " of runtime (layer 9): a package includes only its own and lower layers"])


def struct(name, members):
    return "struct %s {\n%s};\n" % (name, "".join("  int m%d = 0;\n" % k for k in range(members)))


class SharedTypeTest(CommandLineTest):
    def test_data_members_are_counted_and_the_rest_is_not(self):
        src = ("namespace encore {\n"
               "template <class T>\nclass Store final : public Base<T> {\n"
               " public:\n"
               "  Store() = default;\n  explicit Store(int n) : n_{n}, f_([] {}) { Run(); }\n"
               "  Store& operator=(const Store&) = delete;\n  bool operator==(const Store& o) const;\n"
               "  int Size() const { return n_; }\n  virtual void Run() = 0;\n"
               "  static constexpr int kMax = 4;\n  static Store* Make();\n  using Fn = std::function<void()>;\n"
               "  typedef int Id;\n  friend class Other;\n  static_assert(sizeof(int) == 4, \"int\");\n"
               "  template <class U>\n  U As() const;\n"
               "  struct Inner {\n    int q;\n    double r{1.0};\n  };\n  enum class Kind { kA, kB };\n"
               "  ENCORE_FIELDS_(ENCORE_X_)\n"
               " private:\n"
               "  int n_{0};\n  Foo bar_{1, 2};\n  Foo baz_ = Foo(1, 2);\n  std::function<void()> f_;\n"
               "  int a_, b_ = 3;\n  std::map<int, std::pair<int, int>> map_;\n  mutable std::mutex mu_;\n"
               "  int table_[4] = {1, 2, 3, 4};\n  decltype(n_) same_;\n  Inner inner_;\n"
               "  unsigned flag_ : 1;\n  std::vector<int> v_ ENCORE_GUARDED_BY(mu_);\n"
               "  struct { int x; } anon_;\n  const char* name_ = \"}{;\";  // a { in a comment\n"
               "};\n"
               "enum class Outside { kA };\nstruct Forward;\ntemplate <class T, class U = int> struct Pair;\n"
               "}  // namespace encore\n")
        self.assertEqual(house.types_in(src), [("Store", 3, 15), ("Store::Inner", 19, 2)])

    def test_only_wide_types_of_private_headers_other_packages_include(self):
        self.write("graph/body/internal/wide.h", struct("Wide", 13) + struct("Narrow", 12))
        self.write("graph/body/body.cc", includes("graph/body/internal/wide.h"))  # its own package
        self.write("graph/store/store_test.cc", includes("graph/body/internal/wide.h"))  # a test
        self.write("graph/pad/internal/wide_pad.h", struct("WidePad", 20))  # included by no other package
        self.write("graph/runtime/internal/public_root.h", "")
        self.assertEqual(house.shared_type_problems(self.dir), [])
        self.write("graph/store/store.cc", includes("graph/body/internal/wide.h"))
        self.write("graph/manager.cc", includes("graph/body/internal/wide.h"))
        self.assertEqual(house.shared_type_problems(self.dir), [
            "graph/body/internal/wide.h:1: type Wide has 13 data members (limit 12), shared with graph/'s root, "
            "store"])

    def test_bars_fails_on_them_unless_report_only(self):
        for tool in ("bars.py", "house_rules.py"):
            with open(os.path.join(os.path.dirname(BARS), tool)) as src:
                self.write("tools/" + tool, src.read())
        self.write("graph/body/internal/a.h", includes("graph/capture/internal/b.h") +
                   "#ifndef ENCORE_GRAPH_BODY_INTERNAL_A_H_\n#define ENCORE_GRAPH_BODY_INTERNAL_A_H_\n#endif\n")
        self.write("graph/capture/internal/b.h",
                   "#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_B_H_\n#define ENCORE_GRAPH_CAPTURE_INTERNAL_B_H_\n#endif\n")
        bars_copy = [sys.executable, os.path.join(self.dir, "tools/bars.py")]
        problem = ("graph/body/internal/a.h:1: body (layer 1) includes encore/graph/capture/internal/b.h of "
                   "capture (layer 8): a package includes only its own and lower layers")
        for flags, env, rc in (([], {}, 1), (["--layers-report-only"], {}, 0),
                               ([], {"ENCORE_LAYERS_REPORT_ONLY": "1"}, 0)):
            r = subprocess.run(bars_copy + flags, capture_output=True, text=True, env=dict(os.environ, **env))
            self.assertEqual((r.returncode, r.stdout.splitlines()), (rc, [problem]), r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=1)
