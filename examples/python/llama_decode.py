# SPDX-License-Identifier: Apache-2.0
"""Greedy decoding of transformers' LlamaForCausalLM with a StaticCache, three
ways: eagerly, with a hand-written torch.cuda.graph (static input buffers,
copy_ in, clone() out, warmups on a side stream), and with encore (the step
as written, no buffers by hand). Random weights: nothing is downloaded.

  python3 examples/python/llama_decode.py [--layers 8] [--hidden 1024] [--steps 64]

prints the tokens of each way and whether they agree; bench/python_llama_bench.py
times them.
"""

from __future__ import annotations

import argparse

import torch

import encore


def make_model(layers=8, hidden=1024, vocab=32000, heads=16, kv_heads=8, seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 3, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv_heads, vocab_size=vocab,
                      max_position_embeddings=4096)
    return LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()


def make_cache(model, max_len):
    from transformers import StaticCache
    try:
        return StaticCache(config=model.config, max_cache_len=max_len)
    except TypeError:
        return StaticCache(config=model.config, max_batch_size=1, max_cache_len=max_len, device="cuda",
                           dtype=torch.bfloat16)


def cache_tensors(cache) -> dict:
    """The cache's key and value tensors by name (they exist once a forward
    pass has used the cache)."""
    out = {}
    for i, layer in enumerate(getattr(cache, "layers", [])):
        for attr in ("keys", "values"):
            t = getattr(layer, attr, None)
            if isinstance(t, torch.Tensor):
                out[f"cache.{i}.{attr}"] = t
    for attr in ("key_cache", "value_cache"):
        for i, t in enumerate(getattr(cache, attr, []) or []):
            out[f"cache.{attr}.{i}"] = t
    return out


class Decoder:
    """A prompt prefilled eagerly into a fresh cache, then one token per step."""

    def __init__(self, model, prompt_len=16, max_len=256, seed=1):
        self.model = model
        self.cache = make_cache(model, max_len)
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.prompt = torch.randint(0, model.config.vocab_size, (1, prompt_len), device="cuda", generator=g)
        self.positions = torch.arange(max_len, device="cuda")
        self.start = prompt_len
        self.restart()

    def restart(self):
        """Zeroes the cache in place (its tensors keep their addresses, so a
        graph or a compiled function made over them stays valid) and
        prefills the prompt again, eagerly."""
        for t in cache_tensors(self.cache).values():
            t.zero_()
        with torch.no_grad():
            logits = self.model(input_ids=self.prompt, past_key_values=self.cache, use_cache=True,
                                cache_position=self.positions[:self.start]).logits
        self.first = logits[:, -1].argmax(-1, keepdim=True)

    def step(self, token, position):
        """One decode step: the next token after `token` at `position`."""
        logits = self.model(input_ids=token, past_key_values=self.cache, use_cache=True,
                            cache_position=position).logits
        return logits[:, -1].argmax(-1, keepdim=True)


def eager_decode(model, steps, **kw):
    d = Decoder(model, **kw)
    tok, out = d.first, []
    with torch.no_grad():
        for i in range(steps):
            p = d.start + i
            tok = d.step(tok, d.positions[p:p + 1])
            out.append(tok)
    return torch.cat(out, dim=1)


def encore_method(d, manager=None, flags="warmup=2", step=None):
    """The decode step (`step`, by default d.step; e.g. a torch.compile of
    it) as an encore method: the model's parameters read-only constants, the
    cache's tensors constants it writes."""
    return encore.method(step or d.step, name="llama_decode_step", manager=manager, flags=flags,
                         constants=[d.model, cache_tensors(d.cache)])


def encore_decode(model, steps, manager=None, **kw):
    d = Decoder(model, **kw)
    m = encore_method(d, manager)
    tok, out = d.first, []
    with torch.no_grad():
        for i in range(steps):
            p = d.start + i
            tok = m(tok, d.positions[p:p + 1])
            out.append(tok)
    return torch.cat(out, dim=1), m


class HandGraph:
    """What people write today: static buffers, warmups on a side stream,
    torch.cuda.graph, copy_ in and clone() out."""

    def __init__(self, d, warmups=2, step=None):
        self.d = d
        step = step or d.step
        self.tok = d.first.clone()
        self.pos = d.positions[d.start:d.start + 1].clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(s):
            for _ in range(warmups):
                step(self.tok, self.pos)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self.graph):
            self.out = step(self.tok, self.pos)

    def __call__(self, token, position):
        self.tok.copy_(token)
        self.pos.copy_(position)
        self.graph.replay()
        return self.out.clone()


def graph_decode(model, steps, **kw):
    d = Decoder(model, **kw)
    g = HandGraph(d)
    tok, out = d.first, []
    for i in range(steps):
        p = d.start + i
        tok = g(tok, d.positions[p:p + 1])
        out.append(tok)
    return torch.cat(out, dim=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=64)
    a = ap.parse_args()
    model = make_model(a.layers, a.hidden)
    eager = eager_decode(model, a.steps)
    mine, m = encore_decode(model, a.steps)
    hand = graph_decode(model, a.steps)
    print("eager :", eager[0, :16].tolist())
    print("encore:", mine[0, :16].tolist())
    print("tokens equal: encore", torch.equal(mine, eager), "hand graph", torch.equal(hand, eager))
    r = m.report()
    print(f"encore: phase={r['phase']} captures={r['captures']} replays={r['replays']} binding={r['binding']}")


if __name__ == "__main__":
    main()
