"""encore_cuda_library: .cu files compiled by nvcc, feeding a cc_library.

nvcc sees the same include paths and defines as a cc_library with the same
deps, so a .cu file includes `encore/...` headers like any other source.
Code is built for sm_90 (H100/H200) plus compute_90 PTX, so a newer GPU still
runs it through the driver's JIT.
"""

load("@cuda//:defs.bzl", "NVCC")

_GENCODE = [
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
]

def _nvcc_objects_impl(ctx):
    cc = cc_common.merge_cc_infos(
        cc_infos = [d[CcInfo] for d in ctx.attr.deps],
    ).compilation_context
    outs = []
    for src in ctx.files.srcs:
        out = ctx.actions.declare_file("_nvcc/%s/%s.o" % (ctx.label.name, src.basename))
        args = ctx.actions.args()
        args.add_all(["-c", src.path, "-o", out.path])
        args.add_all(["-std=c++20", "-O3", "-Xcompiler=-fPIC", "--expt-relaxed-constexpr"])
        args.add_all(_GENCODE)
        args.add_all(ctx.attr.copts)
        args.add("-I.")
        args.add_all(cc.includes, format_each = "-I%s")
        args.add_all(cc.quote_includes, format_each = "-I%s")
        args.add_all(cc.system_includes, before_each = "-isystem")
        args.add_all(cc.defines, format_each = "-D%s")
        ctx.actions.run(
            executable = NVCC,
            arguments = [args],
            inputs = depset([src] + ctx.files.hdrs, transitive = [cc.headers]),
            outputs = [out],
            mnemonic = "Nvcc",
            progress_message = "nvcc %s" % src.short_path,
            use_default_shell_env = True,
        )
        outs.append(out)
    return [DefaultInfo(files = depset(outs))]

_nvcc_objects = rule(
    implementation = _nvcc_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
    },
)

def encore_cuda_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    """A cc_library whose srcs are .cu files compiled by nvcc.

    `hdrs` are this library's public headers; `deps` give nvcc its include
    paths and are linked in. Other cc_library arguments pass through.
    """
    # The headers as their own library, so nvcc sees them under the same
    # include_prefix that users of the library do.
    header_kwargs = {k: kwargs.pop(k) for k in ["include_prefix", "strip_include_prefix"] if k in kwargs}
    native.cc_library(
        name = name + "_hdrs",
        hdrs = hdrs,
        deps = deps + ["@cuda//:headers"],
        visibility = ["//visibility:private"],
        testonly = kwargs.get("testonly", False),
        **header_kwargs
    )
    _nvcc_objects(
        name = name + "_nvcc",
        srcs = srcs,
        deps = [":" + name + "_hdrs"],
        copts = copts,
        visibility = ["//visibility:private"],
        testonly = kwargs.get("testonly", False),
    )
    native.cc_library(
        name = name,
        srcs = [":" + name + "_nvcc"],
        deps = [":" + name + "_hdrs", "@cuda//:cudart_static"] + deps,
        **kwargs
    )
