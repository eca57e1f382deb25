# SPDX-License-Identifier: Apache-2.0
"""Greedy decoding of transformers' LlamaForCausalLM with a StaticCache, four
ways: eagerly; with a lean hand-written torch.cuda.graph (the graph writes
its token into its own input buffer and advances its position, one clone()
of the token per step); with a copy-heavy one (static input buffers, copy_
in, clone() out); and with encore (the step as written, no buffers by
hand). Both hand graphs warm up on a side stream and put the cache back as
it was before capturing: transformers' StaticCache advances a counter of
its own on the device (`cumulative_length`) on every forward pass, whatever
`cache_position` says, so warmups left in the cache would make the graph
decode positions ahead of the prompt. Random weights: nothing is downloaded.

  python3 examples/python/llama_decode.py [--layers 8] [--hidden 1024] [--steps 64]

prints the tokens of each way and whether they equal eager's (exit 1 if
not); bench/python_llama_bench.py times them.
"""

from __future__ import annotations

import argparse
import sys

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
    """Every tensor of the cache by name, the state a decode step writes:
    each layer's keys and values and, in transformers 5, its device counter
    `cumulative_length` (they exist once a forward pass has used the cache).
    A written tensor left unlisted would be written twice by the capture's
    binding probe, which rewinds only what is listed."""
    out = {}
    for i, layer in enumerate(getattr(cache, "layers", [])):
        for attr, t in vars(layer).items():
            if isinstance(t, torch.Tensor):
                out[f"cache.{i}.{attr}"] = t
    for attr in ("key_cache", "value_cache"):
        for i, t in enumerate(getattr(cache, attr, []) or []):
            out[f"cache.{attr}.{i}"] = t
    return out


def cache_state(cache) -> list:
    """Every tensor the cache holds, once each: the keys and values and, in
    transformers 5, each layer's device counter `cumulative_length`."""
    found, seen = [], set()
    for obj in [cache] + list(getattr(cache, "layers", None) or []):
        for value in vars(obj).values():
            for t in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(t, torch.Tensor) and id(t) not in seen:
                    seen.add(id(t))
                    found.append(t)
    return found


class SavedTensors:
    """Copies of `tensors`, to put back in place (the tensors keep their
    addresses, so graphs over them stay valid)."""

    def __init__(self, tensors):
        self.saved = [(t, t.clone()) for t in tensors]

    def restore(self):
        for t, copy in self.saved:
            t.copy_(copy)


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
        """Zeroes the cache in place, its counters included (its tensors
        keep their addresses, so a graph or a compiled function made over
        them stays valid), and prefills the prompt again, eagerly."""
        for t in cache_state(self.cache):
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


def capture_after_warmups(d, body, warmups, buffers=()):
    """A torch.cuda.graph of `body()` and what it returned, after `warmups`
    calls of it on a side stream. The warmups' effects (the cache's keys,
    values and counters, and `buffers`) are put back before the capture, so
    the graph's first replay decodes the position after the prompt."""
    saved = SavedTensors(cache_state(d.cache) + list(buffers))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(warmups):
            body()
    torch.cuda.current_stream().wait_stream(s)
    saved.restore()
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = body()
    return graph, out


class HandGraph:
    """The copy-heavy hand-written graph: static buffers, warmups on a side
    stream, torch.cuda.graph, copy_ in and clone() out on every call."""

    def __init__(self, d, warmups=2, step=None):
        step = step or d.step
        self.tok = d.first.clone()
        self.pos = d.positions[d.start:d.start + 1].clone()
        self.graph, self.out = capture_after_warmups(d, lambda: step(self.tok, self.pos), warmups,
                                                     [self.tok, self.pos])

    def __call__(self, token, position):
        self.tok.copy_(token)
        self.pos.copy_(position)
        self.graph.replay()
        return self.out.clone()


class LeanHandGraph:
    """What a competent user writes for a greedy decode: the graph feeds
    itself. Its step writes the next token into the graph's own input
    buffer and advances its position in place, so a call is one replay and
    one clone() of the token (kept: the next replay overwrites it). Called
    like the others, with the token it returned last and the next position,
    which the graph already holds: both arguments are ignored."""

    def __init__(self, d, warmups=2, step=None):
        step = step or d.step
        self.tok = d.first.clone()
        self.pos = d.positions[d.start:d.start + 1].clone()

        def body():
            self.tok.copy_(step(self.tok, self.pos))
            self.pos.add_(1)

        self.graph, _ = capture_after_warmups(d, body, warmups, [self.tok, self.pos])

    def __call__(self, token, position):
        self.graph.replay()
        return self.tok.clone()


def graph_decode(model, steps, lean=False, **kw):
    d = Decoder(model, **kw)
    g = LeanHandGraph(d) if lean else HandGraph(d)
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
    ways = {"encore": mine, "lean hand graph": graph_decode(model, a.steps, lean=True),
            "copy-heavy hand graph": graph_decode(model, a.steps)}
    print("eager :", eager[0, :16].tolist())
    print("encore:", mine[0, :16].tolist())
    same = {name: torch.equal(t, eager) for name, t in ways.items()}
    print("tokens equal eager's: " + ", ".join(f"{name} {ok}" for name, ok in same.items()))
    r = m.report()
    print(f"encore: phase={r['phase']} captures={r['captures']} replays={r['replays']} binding={r['binding']}")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
