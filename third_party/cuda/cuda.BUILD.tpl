package(default_visibility = ["//visibility:public"])

exports_files(["defs.bzl"])

cc_library(
    name = "headers",
    hdrs = glob(["include/*.h", "include/crt/*.h", "include/crt/*.hpp", "include/*.hpp"]),
    includes = ["include"],
)

# NVTX3: header-only (nvToolsExt.h loads a profiler's injection library, if
# one is attached, with dlopen); nothing to link but libdl.
cc_library(
    name = "nvtx3",
    hdrs = glob(["include/nvtx3/**"]),
    includes = ["include"],
    linkopts = ["-ldl"],
)

# The runtime, linked statically so a binary runs on a machine where nothing
# is installed but the driver.
cc_library(
    name = "cudart_static",
    srcs = ["lib64/libcudart_static.a"],
    linkopts = ["-ldl", "-lpthread", "-lrt"],
    deps = [":headers"],
)

# NCCL, linked dynamically (the toolkit ships no static archive): binaries
# that use it need libnccl.so.2 where they run (GPU machines with PyTorch or
# NCCL installed have it in the loader's path).
cc_library(
    name = "nccl",
    hdrs = ["include/nccl.h"],
    includes = ["include"],
    linkopts = [
        "-L%{lib64}",
        "-lnccl",
    ],
    deps = [":headers"],
)
