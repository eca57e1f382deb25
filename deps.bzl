# SPDX-License-Identifier: Apache-2.0
"""External repositories encore needs; call encore_dependencies() from a WORKSPACE.

encore_dependencies() declares @cuda (the local CUDA toolkit and NCCL, see
third_party/cuda/cuda_configure.bzl) and @torch (PyTorch's C++ headers and
libraries where installed, see third_party/torch/torch_configure.bzl) unless
the workspace already has repositories of those names; Debian's spdlog, fmt and GoogleTest come from the
machine.

encore_offline_rules() is for workspaces that build with no network (encore's
own, its examples): it declares small stand-ins for the rules Bazel 4.2.3
fetches on its own (rules_cc, rules_java, remote_coverage_tools), kept in
third_party/ because Debian's bazel-rules-cc is too new for 4.2.3. A project
with network access, or its own rules_cc, should not call it: the stand-ins
would shadow the real rules.
"""

load("@encore//third_party/cuda:cuda_configure.bzl", "cuda_configure")
load("@encore//third_party/torch:torch_configure.bzl", "torch_configure")

def _standin_repository_impl(rctx):
    for src, dest in rctx.attr.files.items():
        rctx.symlink(src, dest)
    for pkg in rctx.attr.packages:
        rctx.file(pkg + "/BUILD" if pkg else "BUILD", rctx.attr.build)
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)

_standin_repository = repository_rule(
    implementation = _standin_repository_impl,
    attrs = {
        "files": attr.label_keyed_string_dict(allow_files = True),
        "packages": attr.string_list(),
        "build": attr.string(default = "package(default_visibility = [\"//visibility:public\"])\n"),
    },
)

def _standin(name, files, packages, build = None):
    if native.existing_rule(name):
        return
    kwargs = {"build": build} if build else {}
    _standin_repository(name = name, files = files, packages = packages, **kwargs)

def encore_offline_rules():
    """Stand-ins for rules_cc, rules_java and remote_coverage_tools, for offline builds."""
    _standin("rules_cc", {"@encore//third_party/standins:rules_cc_defs.bzl": "cc/defs.bzl"}, ["", "cc"])
    _standin("rules_java", {"@encore//third_party/standins:rules_java_defs.bzl": "java/defs.bzl"}, ["", "java"])
    _standin(
        "remote_coverage_tools",
        {},
        [""],
        build = "\n".join([
            "package(default_visibility = [\"//visibility:public\"])",
            "filegroup(name = \"coverage_report_generator\", srcs = [])",
            "filegroup(name = \"lcov_merger\", srcs = [])",
            "",
        ]),
    )

def encore_dependencies():
    """Declares @cuda and @torch unless the workspace already has them."""
    if not native.existing_rule("cuda"):
        cuda_configure(name = "cuda")

    # PyTorch, for the optional //interop/torch adapter; fetched only when a
    # target that needs it is built.
    if not native.existing_rule("torch"):
        torch_configure(name = "torch")
