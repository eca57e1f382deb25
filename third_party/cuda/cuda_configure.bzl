# SPDX-License-Identifier: Apache-2.0
"""@cuda: the local CUDA toolkit (headers, cudart, cuBLAS, nvcc) and NCCL as a repository.

Where things are found (each decided when the repository is fetched; changing
one of the environment variables below refetches it):

  CUDA_PATH     the toolkit root (include/cuda_runtime.h, lib64/ or lib/ with
                libcudart_static.a and/or libcudart.so); default /usr/local/cuda.
  ENCORE_NVCC   the nvcc that compiles .cu files; default $CUDA_PATH/bin/nvcc.
                Set it when the toolkit tree has no compiler (tools/cuda12_check.sh
                builds against CUDA 12 headers and runtime from PyPI that way).
  NCCL_HOME     where NCCL is installed (include/nccl.h, lib/ or lib64/ with
                libnccl.so), and then only there; unset, the toolkit, then the
                system's include and library directories (multiarch ones
                included) are searched.
                Without NCCL, @cuda//:nccl is incompatible with every platform, so
                `//...` skips the targets that need it and everything else builds.

cuBLAS and cuBLASLt (@cuda//:cublas) are taken from the toolkit only
(lib64/libcublas.so and libcublasLt.so, or their versioned names, with
cublas_v2.h and cublasLt.h). Trees without them (the CUDA 12 runtime wheels
of tools/cuda12_check.sh) get an incompatible @cuda//:cublas, as for NCCL.

Nothing links the driver library: the driver is reached at run time through
cudart, so binaries link on machines with no driver and run where one is
installed.
"""

# Oldest runtime encore compiles against: cuFuncGetParamInfo appears in 12.4.
_MIN_CUDART_VERSION = 12040

# Lowest GPU architecture in the default build (Ampere).
_MIN_DEFAULT_ARCH = 80

def _words(text):
    return [w for w in text.replace("\t", " ").replace("\n", " ").split(" ") if w]

def _exists(rctx, path):
    return rctx.path(path).exists

def _cudart_version(rctx, include):
    """CUDART_VERSION from cuda_runtime_api.h (e.g. 12090), or fails."""
    text = rctx.read(include + "/cuda_runtime_api.h")
    for line in text.splitlines():
        parts = _words(line)
        if len(parts) >= 3 and parts[0] == "#define" and parts[1] == "CUDART_VERSION":
            return int(parts[2])
    fail("encore: no CUDART_VERSION in %s/cuda_runtime_api.h" % include)

def _supported_archs(rctx, nvcc):
    """The SASS architectures nvcc can build, as integers (90 for sm_90)."""
    res = rctx.execute([nvcc, "--list-gpu-code"])
    if res.return_code != 0:
        fail("encore: '%s --list-gpu-code' failed: %s" % (nvcc, res.stderr))
    archs = []
    for word in _words(res.stdout):
        num = word[len("sm_"):] if word.startswith("sm_") else ""
        if num.isdigit() and int(num) not in archs:  # sm_90a, sm_100f: family variants, left out
            archs.append(int(num))
    return sorted(archs)

def _multiarch(rctx):
    """The Debian multiarch triplet (x86_64-linux-gnu, aarch64-linux-gnu), or ""."""
    for cmd in [["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], ["gcc", "-print-multiarch"]]:
        res = rctx.execute(cmd)
        if res.return_code == 0 and res.stdout.strip():
            return res.stdout.strip()
    return ""

def _find_nccl(rctx, cuda_root):
    """(include dir, lib dir, where) of an NCCL installation, or None, plus what was searched."""
    triplet = _multiarch(rctx)
    candidates = []
    nccl_home = rctx.os.environ.get("NCCL_HOME", "")
    if nccl_home:
        # The user named one: no other NCCL is taken silently in its place.
        candidates.append((nccl_home + "/include", [nccl_home + "/lib", nccl_home + "/lib64"], "$NCCL_HOME"))
    else:
        candidates.extend(_default_nccl_candidates(cuda_root, triplet))
    searched = []
    for inc, libs, where in candidates:
        for lib in libs:
            searched.append("%s + %s" % (inc, lib))
            if _exists(rctx, inc + "/nccl.h") and (_exists(rctx, lib + "/libnccl.so") or _exists(rctx, lib + "/libnccl.so.2")):
                return struct(include = inc, lib = lib, where = where), searched
    return None, searched

def _default_nccl_candidates(cuda_root, triplet):
    candidates = []
    candidates.append((cuda_root + "/include", [cuda_root + "/lib64", cuda_root + "/lib"], "the CUDA toolkit"))
    system_libs = ["/usr/lib/" + triplet] if triplet else []
    candidates.append(("/usr/include", system_libs + ["/usr/lib64", "/usr/lib"], "the system"))
    local_libs = ["/usr/local/lib/" + triplet] if triplet else []
    candidates.append(("/usr/local/include", local_libs + ["/usr/local/lib64", "/usr/local/lib"], "/usr/local"))
    return candidates

def _find_cublas(rctx, include, lib, major):
    """The names to link cuBLAS and cuBLASLt by (["cublas", "cublasLt"], or
    [":libcublas.so.13", ...] where only the versioned files exist), or None."""
    if not (_exists(rctx, include + "/cublas_v2.h") and _exists(rctx, include + "/cublasLt.h")):
        return None
    names = []
    for base in ["cublas", "cublasLt"]:
        if _exists(rctx, "%s/lib%s.so" % (lib, base)):
            names.append(base)
        elif _exists(rctx, "%s/lib%s.so.%d" % (lib, base, major)):
            names.append(":lib%s.so.%d" % (base, major))  # ld's -l:FILE
        else:
            return None
    return names

def _cudart_shared_name(rctx, lib, major):
    for name in ["libcudart.so", "libcudart.so.%d" % major]:
        if _exists(rctx, lib + "/" + name):
            return name
    return None

def _cudart_targets(static, shared_name, lib, version):
    rules = []
    if static:
        rules.append("""
# The runtime, linked statically, so a binary runs on a machine where nothing
# is installed but the driver.
cc_library(
    name = "cudart_static",
    srcs = ["lib64/libcudart_static.a"],
    linkopts = ["-ldl", "-lpthread", "-lrt"],
    deps = [":headers"],
)
""")
    else:
        rules.append("""
# This toolkit (CUDA %s) has no libcudart_static.a: build with
# --@encore//tools:cudart=shared.
cc_library(
    name = "cudart_static",
    target_compatible_with = [":has_cudart_static"],
    deps = [":headers"],
)
""" % version)
    if shared_name:
        rules.append("""
# The runtime as a shared library: binaries need %s where they run (found
# through the rpath below, or the loader's path).
cc_library(
    name = "cudart_shared",
    srcs = ["lib64/%s"],
    linkopts = ["-Wl,-rpath,%s", "-ldl", "-lpthread", "-lrt"],
    deps = [":headers"],
)
""" % (shared_name, shared_name, lib))
    else:
        rules.append("""
cc_library(
    name = "cudart_shared",
    target_compatible_with = [":has_cudart_shared"],
    deps = [":headers"],
)
""")
    return "".join(rules)

def _nccl_target(nccl, searched):
    if nccl:
        return """
# NCCL from %s (%s, %s), linked dynamically: binaries that use it need
# libnccl.so.2 where they run (GPU machines with PyTorch or NCCL installed
# have it in the loader's path).
cc_library(
    name = "nccl",
    hdrs = ["nccl_include/nccl.h"],
    strip_include_prefix = "nccl_include",
    linkopts = ["-L%s", "-lnccl"],
    deps = [":headers"],
)
""" % (nccl.where, nccl.include, nccl.lib, nccl.lib)
    return """
# No NCCL was found (searched: %s). Set NCCL_HOME to an NCCL installation to
# build the targets that need it; without it they are skipped.
cc_library(
    name = "nccl",
    target_compatible_with = [":nccl_installed"],
)
""" % "; ".join(searched)

def _cublas_target(cublas, lib, version):
    if cublas:
        return """
# cuBLAS and cuBLASLt of this toolkit (CUDA %s), linked dynamically: binaries
# need libcublas.so.N and libcublasLt.so.N where they run (found through the
# rpath below, the loader's path, or LD_LIBRARY_PATH; tools/gpu_suite.sh run
# adds the lib folders of python3's nvidia packages, PyTorch's CUDA wheels,
# when the loader lacks them).
cc_library(
    name = "cublas",
    linkopts = %r,
    deps = [":headers"],
)
""" % (version, ["-L" + lib, "-Wl,-rpath," + lib] + ["-l" + n for n in cublas])
    return """
# This toolkit (CUDA %s) has no cuBLAS (cublas_v2.h and cublasLt.h, with
# libcublas.so and libcublasLt.so or their versioned names, in
# %s): the targets that need it are skipped.
cc_library(
    name = "cublas",
    target_compatible_with = [":cublas_installed"],
)
""" % (version, lib)

def _cuda_configure_impl(rctx):
    root = rctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    include = root + "/include"
    if not _exists(rctx, include + "/cuda_runtime.h"):
        fail("encore: no CUDA toolkit at '%s' (set CUDA_PATH); install NVIDIA's CUDA toolkit, 12.4 or newer" % root)
    version = _cudart_version(rctx, include)
    version_str = "%d.%d" % (version // 1000, (version % 1000) // 10)
    if version < _MIN_CUDART_VERSION:
        fail("encore: the CUDA toolkit at '%s' is %s; encore needs 12.4 or newer (cuFuncGetParamInfo)" % (root, version_str))
    lib = root + "/lib64" if _exists(rctx, root + "/lib64") else root + "/lib"
    nvcc = rctx.os.environ.get("ENCORE_NVCC", root + "/bin/nvcc")
    if not _exists(rctx, nvcc):
        fail("encore: no nvcc at '%s' (set ENCORE_NVCC to the nvcc that compiles encore's .cu files)" % nvcc)
    archs = [a for a in _supported_archs(rctx, nvcc) if a >= _MIN_DEFAULT_ARCH]
    if not archs:
        fail("encore: '%s' builds no GPU architecture from sm_%d up" % (nvcc, _MIN_DEFAULT_ARCH))
    default_archs = ["sm_%d" % a for a in archs] + ["compute_%d" % archs[-1]]

    static = _exists(rctx, lib + "/libcudart_static.a")
    shared_name = _cudart_shared_name(rctx, lib, version // 1000)
    if not static and not shared_name:
        fail("encore: no libcudart_static.a or libcudart.so in '%s'" % lib)
    nccl, searched = _find_nccl(rctx, root)
    cublas = _find_cublas(rctx, include, lib, version // 1000)

    rctx.symlink(include, "include")
    rctx.symlink(lib, "lib64")
    if nccl:
        rctx.symlink(nccl.include + "/nccl.h", "nccl_include/nccl.h")
    rctx.template("BUILD", rctx.attr._build_tpl, {
        "%{cuda_version}": version_str,
        "%{cudart_version}": str(version),
        "%{cudart}": _cudart_targets(static, shared_name, lib, version_str),
        "%{nccl}": _nccl_target(nccl, searched),
        "%{cublas}": _cublas_target(cublas, lib, version_str),
    })
    rctx.file("defs.bzl", "\n".join([
        "# Generated by encore's cuda_configure: what was found, for tools/cuda.bzl and the scripts.",
        "NVCC = %r" % nvcc,
        "CUDA_ROOT = %r" % root,
        "CUDA_VERSION = %r" % version_str,
        "CUDART_VERSION = %d" % version,
        "SUPPORTED_ARCHS = %r" % archs,
        "DEFAULT_CUDA_ARCHS = %r" % default_archs,
        "HAS_CUDART_STATIC = %r" % static,
        "HAS_CUDART_SHARED = %r" % (shared_name != None),
        "NCCL_FOUND = %r" % (nccl != None),
        "NCCL_WHERE = %r" % ("%s (%s)" % (nccl.where, nccl.lib) if nccl else ""),
        "NCCL_SEARCHED = %r" % searched,
        "CUBLAS_FOUND = %r" % (cublas != None),
        "",
    ]))
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH", "ENCORE_NVCC", "NCCL_HOME"],
    local = True,
    attrs = {"_build_tpl": attr.label(default = "@encore//third_party/cuda:cuda.BUILD.tpl")},
)
