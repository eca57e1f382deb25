# SPDX-License-Identifier: Apache-2.0
"""Serving requests of changing batch sizes with encore: transformers'
LlamaModel used as an encoder (a request is [b, 64] token ids, its response
the [b, 64, hidden] last hidden states; rows do not see each other), random
weights from a config, nothing downloaded.

One method serves every batch size: `on_new_shape=pad` with the buckets
listed, so a request of b rows replays the graph of the smallest bucket
>= b with zero rows added and returns b rows. `precapture` captures every
bucket, largest first, before the first request, so no request waits for a
capture. Each response is compared with the model run eagerly on the same
request (bf16: within ROW_TOLERANCE, see `row_error`); the program exits 1
if one differs.

  python3 examples/python/serving.py [--layers 4] [--hidden 1024] [--requests 300]

bench/python_serving_bench.py times this against hand-written bucket graphs,
torch.compile and eager.
"""

from __future__ import annotations

import argparse
import random
import sys

import torch

import encore

SEQ = 64                                  # tokens per row of a request
BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)   # the batch sizes graphs are captured for
# The largest relative error of a response row against eager: kernels that
# see another number of rows (a padded bucket) may sum in another order,
# which moves a row by about what bf16 rounding does (about 1% against
# float32); a wrong, stale or zero row is off by about 100%.
ROW_TOLERANCE = 0.05


def make_encoder(layers=4, hidden=1024, vocab=32000, heads=16, kv_heads=8, seed=0, device="cuda"):
    from transformers import LlamaConfig, LlamaModel
    torch.manual_seed(seed)
    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 3, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv_heads, vocab_size=vocab,
                      max_position_embeddings=4096)
    return LlamaModel(cfg).to(device, torch.bfloat16).eval()


def encode_fn(model):
    """The function served: token ids [b, SEQ] -> hidden states [b, SEQ, hidden]."""
    def encode(tokens):
        return model(input_ids=tokens, use_cache=False).last_hidden_state
    return encode


def zipf_batches(n, top=128, s=1.1, seed=0):
    """n batch sizes in 1..top, P(b) proportional to b**-s: many small
    requests, a few large ones. The same list for the same arguments."""
    sizes = range(1, top + 1)
    return random.Random(seed).choices(sizes, weights=[b ** -s for b in sizes], k=n)


def make_requests(batches, vocab=32000, seed=1, device="cuda"):
    """One tensor of token ids per batch size, each its own random rows."""
    g = torch.Generator(device=device).manual_seed(seed)
    return [torch.randint(0, vocab, (b, SEQ), device=device, generator=g) for b in batches]


def row_error(got, want):
    """The largest relative L2 error of a row (dim 0) of `got` against `want`."""
    g, w = got.float().flatten(1), want.float().flatten(1)
    return float(((g - w).norm(dim=1) / w.norm(dim=1).clamp_min(1e-30)).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--requests", type=int, default=300)
    a = ap.parse_args()
    model = make_encoder(a.layers, a.hidden)
    encode = encode_fn(model)
    serve = encore.method(encode, name="encode", constants=model,
                          flags="on_new_shape=pad,buckets=" + "|".join(map(str, BUCKETS)))
    requests = make_requests(zipf_batches(a.requests, top=BUCKETS[-1]))
    worst, wrong = 0.0, 0
    with torch.no_grad():  # parameters require grad: under grad mode every call would run eagerly
        serve.precapture(torch.zeros(BUCKETS[-1], SEQ, dtype=torch.long, device="cuda"))
        for x in requests:
            y = serve(x)
            err = row_error(y, encode(x)) if y.shape[0] == x.shape[0] else float("inf")
            worst, wrong = max(worst, err), wrong + (err > ROW_TOLERANCE)
    r = serve.report()
    print(f"buckets={r['buckets']} precaptures={r['precaptures']} calls={r['calls']} replays={r['replays']} "
          f"eager_calls={r['eager_calls']} eager_by_reason={r['eager_by_reason']}")
    share = r["padded_rows"] / max(1, r["real_rows"] + r["padded_rows"])
    print(f"real_rows={r['real_rows']} padded_rows={r['padded_rows']} ({share:.1%} of the rows replayed are padding)")
    print(f"{len(requests) - wrong} of {len(requests)} responses equal eager's within {ROW_TOLERANCE} "
          f"(largest row error {worst:.2e})")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
