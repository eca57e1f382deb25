# SPDX-License-Identifier: Apache-2.0
"""Many tokens per launch: transformers' LlamaForCausalLM decoded greedily
inside encore.while_loop, up to `chunk` tokens per call, stopping on the
device at an end token. One call is one graph launch (a CUDA WHILE node
around the model's step) and one host sync to read how many tokens came.

  python3 examples/python/llama_loop_decode.py [--layers 2] [--hidden 512] [--chunk 16]
"""

from __future__ import annotations

import argparse

import torch

import encore
from llama_decode import Decoder, cache_tensors, eager_decode, make_model


class LoopDecoder:
    """`generate(token, position)` returns (tokens, count, last token, next
    position, done): up to `chunk` tokens written into a buffer on the
    device, stopping after the end token. `host_reads` counts the reads of a
    device value on the host (each a sync) that `decode` made."""

    def __init__(self, d: Decoder, chunk: int, eos: int, manager=None, flags="warmup=1"):
        self.d, self.chunk = d, chunk
        self.host_reads = 0
        self.eos = torch.tensor(eos, device="cuda")

        def generate(token, position):
            i0 = torch.zeros((), dtype=torch.int64, device="cuda")
            done0 = torch.zeros((), dtype=torch.bool, device="cuda")
            toks0 = torch.zeros((1, chunk), dtype=torch.int64, device="cuda")

            def more(i, tok, pos, done, toks):
                return (i < chunk) & ~done

            def step(i, tok, pos, done, toks):
                nxt = d.step(tok, pos)
                return i + 1, nxt, pos + 1, (nxt == self.eos).all(), toks.index_copy(1, i.view(1), nxt)

            i, tok, pos, done, toks = encore.while_loop(more, step, (i0, token, position, done0, toks0),
                                                        max_iterations=chunk)
            return toks, i, tok, pos, done

        self.method = encore.method(generate, name=f"llama_loop_decode_{chunk}", manager=manager, flags=flags,
                                    constants=[d.model, cache_tensors(d.cache), {"eos": self.eos}])

    def decode(self, total: int):
        """Up to `total` tokens (fewer if the end token comes first), and the
        number of calls it took. Each call reads its count and its end flag
        in one host read."""
        d = self.d
        tok, pos = d.first, d.positions[d.start:d.start + 1]
        out, produced, calls = [], 0, 0
        with torch.no_grad():
            while produced < total:
                toks, n, tok, pos, done = self.method(tok, pos)
                calls += 1
                n, done = torch.stack((n, done.to(n.dtype))).tolist()  # the call's one host read
                self.host_reads += 1
                out.append(toks[:, :n])
                produced += n
                if done:
                    break
        return torch.cat(out, dim=1)[:, :total], calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=64)
    a = ap.parse_args()
    model = make_model(a.layers, a.hidden)
    max_len = 16 + a.tokens + a.chunk + 8
    eager = eager_decode(model, a.tokens, max_len=max_len)
    eos = int(eager[0, a.tokens // 2])  # an end token the greedy decode reaches half way
    loop = LoopDecoder(Decoder(model, max_len=max_len), a.chunk, eos)
    toks, calls = loop.decode(a.tokens)
    stop = int((eager[0] == eos).nonzero()[0]) + 1
    print(f"loop: {toks.shape[1]} tokens in {calls} calls; stops at the end token: {toks.shape[1] == stop}; "
          f"tokens equal eager: {torch.equal(toks, eager[:, :stop])}")
    r = loop.method.report()
    print(f"phase={r['phase']} captures={r['captures']} replays={r['replays']} binding={r['binding']} "
          f"graph_nodes={r['graph_nodes']}")


if __name__ == "__main__":
    main()
