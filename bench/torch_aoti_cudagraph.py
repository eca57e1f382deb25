#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch.cuda.CUDAGraph's side of bench/torch_aoti_bench.cc, from Python:
the same decoder (bench/torch_aoti_model.py: the package with --package,
else the eager module with the same weights), the caller's tensors rotating
among 4:
  eager            fn(x), copied into the caller's output
  replay+copy      static_in.copy_(x); g.replay(); y.copy_(static_out)
  replay           g.replay() alone
CPU us/call (submitting N calls) and end-to-end us/call (submit + sync), the
median of the repeats, variants taking turns (bench_common.measure). Not run
by tools/gpu_suite.sh (not *_bench.py); tools/torch_suite.sh runs it.

    python3 bench/torch_aoti_cudagraph.py [--package PATH] [--json PATH] [--quick]
Exits 77 without a CUDA device, 1 if a graph's output differs from eager.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import measure, write_json  # noqa: E402
import torch_aoti_model as model_def  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package")
    ap.add_argument("--json", default="torch_aoti_cudagraph.json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("torch_aoti_cudagraph: no CUDA device visible", file=sys.stderr)
        return 77
    torch.set_grad_enabled(False)
    if args.package:
        runner = torch._inductor.aoti_load_package(args.package, run_single_threaded=True)
        fn, what = runner, "AOTInductor package (Python runner, single-threaded)"
    else:
        fn, what = model_def.build(torch), "eager nn.Module (same weights as the package)"
    ins = [model_def.example_input(torch, seed=i) for i in range(4)]
    outs = [torch.empty_like(ins[0]) for _ in range(4)]
    static_in = ins[0].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(static_in)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = fn(static_in)

    def replay_copy(i):
        static_in.copy_(ins[i % 4])
        g.replay()
        outs[i % 4].copy_(static_out)

    for i in range(4):
        replay_copy(i)
        if not torch.equal(outs[i % 4], fn(ins[i % 4])):
            print("torch_aoti_cudagraph: replay %d differs from eager" % i, file=sys.stderr)
            return 1
    variants = [
        ("eager", lambda i: outs[i % 4].copy_(fn(ins[i % 4]))),
        ("CUDAGraph copy_ + replay + copy_ (Python)", replay_copy),
        ("CUDAGraph replay alone (Python)", lambda i: g.replay()),
    ]
    n, repeats = (20, 5) if args.quick else (100, 21)
    t = measure(torch, n, repeats, 20, variants)
    print("torch_aoti_cudagraph: %s, input %s bf16" % (what, tuple(ins[0].shape)))
    for name, _ in variants:
        print("  %-46s CPU %9.2f us  end-to-end %9.2f us" % (name, t[name]["cpu_us"], t[name]["e2e_us"]))
    errors = []
    write_json(json.dumps({"body": what, "variants": t}, indent=1) + "\n", args.json,
               os.path.basename(args.json), errors)
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
