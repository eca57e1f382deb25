#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loads an AOTInductor package from Python (torch._inductor.aoti_load_package)
and runs it once, printing each step with faulthandler on, so that a crash
(one host segfaulted inside torch.export.pt2_archive._package._load_aoti)
leaves the Python stack of every thread. tools/torch_suite.sh runs it in a
child process. A module-free script, not a benchmark.

    python3 tools/torch_aoti_load.py PACKAGE.pt2 [--single]
"""

import faulthandler
import sys


def step(what):
    print("load.py: " + what, file=sys.stderr, flush=True)


def main():
    faulthandler.enable(all_threads=True)
    path = sys.argv[1]
    single = "--single" in sys.argv[2:]
    step("import torch")
    import torch

    step("torch %s, CUDA %s, device %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name()))
    step("aoti_load_package(run_single_threaded=%s)" % single)
    runner = torch._inductor.aoti_load_package(path, run_single_threaded=single)
    step("running it once")
    x = torch.randn(4, 32, 768, device="cuda", dtype=torch.bfloat16)
    y = runner(x)
    torch.cuda.synchronize()
    step("OK: output %s" % (tuple(y.shape) if hasattr(y, "shape") else type(y)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
