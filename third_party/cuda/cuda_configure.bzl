"""@cuda: the local CUDA toolkit (headers, static cudart, nvcc) as a repository.

The toolkit is found at $CUDA_PATH, else /usr/local/cuda. Nothing links the
driver library: the driver is reached at run time through cudart, so binaries
link on machines with no driver and run where one is installed.
"""

def _cuda_configure_impl(rctx):
    root = rctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    if not rctx.path(root + "/include/cuda_runtime.h").exists:
        fail("encore: no CUDA toolkit at '%s' (set CUDA_PATH); install nvidia-cuda-toolkit or NVIDIA's CUDA 13 packages" % root)
    rctx.symlink(root + "/include", "include")
    rctx.symlink(root + "/lib64", "lib64")
    rctx.template("BUILD", rctx.attr._build_tpl, {"%{lib64}": root + "/lib64"})
    rctx.file("defs.bzl", "NVCC = \"%s/bin/nvcc\"\n" % root)

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
    attrs = {"_build_tpl": attr.label(default = "@encore//third_party/cuda:cuda.BUILD.tpl")},
)
