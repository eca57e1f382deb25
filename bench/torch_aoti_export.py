#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compiles bench/torch_aoti_model.py's decoder into an AOTInductor package
with torch._inductor.aoti_compile_and_package (about 75 s on the H200 host).

    python3 bench/torch_aoti_export.py OUT.pt2 [--constants-outside-so]
                                       [--no-embed-kernels] [--device cuda|cpu]

--constants-outside-so: aot_inductor.package_constants_in_so=False (the
weights as files in the package, not in the .so); --no-embed-kernels:
aot_inductor.embed_kernel_binary=False (kernel binaries as files). Both are
variants tools/torch_suite.sh tries when loading the default package crashes. Writes OUT.pt2 and OUT.pt2.json (the options, the input shape,
the compile time). Exits 77 without the device, 1 on failure.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_aoti_model as model_def  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--constants-outside-so", action="store_true")
    ap.add_argument("--no-embed-kernels", action="store_true")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_aoti_export: no CUDA device visible", file=sys.stderr)
        return 77
    configs = {}
    if args.constants_outside_so:
        configs["aot_inductor.package_constants_in_so"] = False
    if args.no_embed_kernels:
        configs["aot_inductor.embed_kernel_binary"] = False
    t0 = time.time()
    with torch.no_grad():
        model = model_def.build(torch, args.device)
        x = model_def.example_input(torch, device=args.device)
        ep = torch.export.export(model, (x,))
        path = torch._inductor.aoti_compile_and_package(ep, package_path=args.out, inductor_configs=configs)
    seconds = time.time() - t0
    info = {
        "package": path,
        "torch": torch.__version__,
        "inductor_configs": configs,
        "input": [model_def.BATCH, model_def.SEQ, model_def.EMBD],
        "dtype": "bfloat16",
        "compile_s": round(seconds, 1),
        "bytes": os.path.getsize(path),
    }
    with open(args.out + ".json", "w") as f:
        json.dump(info, f, indent=1)
    print("torch_aoti_export: %s (%d bytes) in %.1f s, configs %s" % (path, info["bytes"], seconds, configs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
