# SPDX-License-Identifier: Apache-2.0
"""encore_cuda_library: .cu files compiled by nvcc, feeding a cc_library.

nvcc sees the same include paths and defines as a cc_library with the same
deps, so a .cu file includes `encore/...` headers like any other source.

GPU code comes from the build setting //tools:cuda_archs (from a workspace
that uses encore: --@encore//tools:cuda_archs=sm_80,sm_90,compute_90). Each
entry is sm_NN (machine code for that architecture) or compute_NN (PTX, which
the driver compiles for the GPU it runs on, newer ones included). Left empty,
the default is machine code for every architecture from sm_80 that the
toolkit's nvcc builds, plus PTX for the newest of them.
"""

load("@cuda//:defs.bzl", "DEFAULT_CUDA_ARCHS", "NVCC")
load("//tools:build_settings.bzl", "BuildSettingInfo")

def _arch_number(arch, prefix):
    """"90" for sm_90, "90a" for sm_90a; None if `arch` is not prefix + digits [+ a|f]."""
    if not arch.startswith(prefix):
        return None
    num = arch[len(prefix):]
    digits = num.rstrip("af")
    if not digits.isdigit() or len(num) - len(digits) > 1:
        return None
    return num

def cuda_archs(setting):
    """The architectures a build makes from the setting's value (a list)."""
    archs = [a.strip() for a in setting if a.strip()]
    if not archs:
        return DEFAULT_CUDA_ARCHS
    for a in archs:
        if _arch_number(a, "sm_") == None and _arch_number(a, "compute_") == None:
            fail("//tools:cuda_archs: '%s' is neither sm_NN (machine code) nor compute_NN (PTX); " % a +
                 "e.g. --@encore//tools:cuda_archs=sm_80,sm_90,compute_90")
    return archs

def gencode_flags(archs):
    """nvcc's -gencode flags for a list of sm_NN / compute_NN."""
    flags = []
    for a in archs:
        num = _arch_number(a, "sm_")
        if num != None:
            flags.append("-gencode=arch=compute_%s,code=sm_%s" % (num, num))
        else:
            num = _arch_number(a, "compute_")
            flags.append("-gencode=arch=compute_%s,code=compute_%s" % (num, num))
    return flags

def _from_cuda_repo(path):
    """True for include paths into @cuda: nvcc uses its own toolkit's headers."""
    return path.startswith("external/cuda/") or "/external/cuda/" in path

def _nvcc_objects_impl(ctx):
    cc = cc_common.merge_cc_infos(
        cc_infos = [d[CcInfo] for d in ctx.attr.deps],
    ).compilation_context
    # nvcc reads its own toolkit's headers, not @cuda's: leaving those out of
    # the inputs keeps .cu objects one action whichever CUDA_PATH the C++ code
    # is built against (tools/cuda12_check.sh reuses them from the cache).
    headers = [h for h in cc.headers.to_list() if h.owner == None or h.owner.workspace_name != "cuda"]
    outs = []
    for src in ctx.files.srcs:
        out = ctx.actions.declare_file("_nvcc/%s/%s.o" % (ctx.label.name, src.basename))
        args = ctx.actions.args()
        args.add_all(["-c", src.path, "-o", out.path])
        args.add_all(["-std=c++20", "-O3", "-Xcompiler=-fPIC", "--expt-relaxed-constexpr"])
        args.add_all(gencode_flags(cuda_archs(ctx.attr._cuda_archs[BuildSettingInfo].value)))
        args.add_all(ctx.attr.copts)
        args.add("-I.")
        args.add_all(cc.includes, format_each = "-I%s")
        args.add_all(cc.quote_includes, format_each = "-I%s")
        args.add_all([p for p in cc.system_includes.to_list() if not _from_cuda_repo(p)], before_each = "-isystem")
        args.add_all(cc.defines, format_each = "-D%s")
        ctx.actions.run(
            executable = NVCC,
            arguments = [args],
            inputs = depset([src] + ctx.files.hdrs + headers),
            outputs = [out],
            mnemonic = "Nvcc",
            progress_message = "nvcc %s" % src.short_path,
            use_default_shell_env = True,
        )
        outs.append(out)
    return [DefaultInfo(files = depset(outs), runfiles = ctx.runfiles(files = outs))]

_nvcc_objects = rule(
    implementation = _nvcc_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "_cuda_archs": attr.label(default = Label("//tools:cuda_archs")),
    },
)

def _cuda_archs_header_impl(ctx):
    archs = cuda_archs(ctx.attr._cuda_archs[BuildSettingInfo].value)
    ctx.actions.write(ctx.outputs.out, "\n".join([
        "// Generated from //tools:cuda_archs by tools/cuda.bzl: the GPU code in",
        "// encore's kernels, named in \"no kernel image\" errors.",
        "#ifndef ENCORE_CORE_CUDA_ARCHS_H_",
        "#define ENCORE_CORE_CUDA_ARCHS_H_",
        "",
        "#include <string_view>",
        "",
        "namespace encore {",
        "",
        "// sm_NN: machine code; compute_NN: PTX the driver compiles for newer GPUs.",
        "inline constexpr std::string_view kBuiltCudaArchs = \"%s\";" % " ".join(archs),
        "",
        "}  // namespace encore",
        "",
        "#endif  // ENCORE_CORE_CUDA_ARCHS_H_",
        "",
    ]))
    return [DefaultInfo(files = depset([ctx.outputs.out]), runfiles = ctx.runfiles(files = [ctx.outputs.out]))]

# Writes `out`, a header with kBuiltCudaArchs: the architectures of this build.
cuda_archs_header = rule(
    implementation = _cuda_archs_header_impl,
    attrs = {
        "out": attr.output(mandatory = True),
        "_cuda_archs": attr.label(default = Label("//tools:cuda_archs")),
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
        deps = deps + [Label("@cuda//:headers")],
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
        deps = [":" + name + "_hdrs", Label("//third_party:cudart")] + deps,
        **kwargs
    )
