# SPDX-License-Identifier: Apache-2.0
"""transformers' LlamaForCausalLM (random weights, StaticCache) decoded
greedily under encore and by the hand-written graphs: the same tokens as
eager decoding, and the graphs' paths ran (captures, replays, calls)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python"))

# A vocabulary of 32000: with random weights a small vocabulary's greedy
# decode falls into a short cycle within a few tokens, and an end token
# taken from it would stop the loop in its first call.
MODEL = dict(layers=2, hidden=256, vocab=32000, heads=4, kv_heads=2)


def test_llama_decode_tokens_equal_eager(torch_cuda):
    pytest.importorskip("transformers")
    import encore
    from llama_decode import eager_decode, encore_decode, make_model
    model = make_model(**MODEL)
    eager = eager_decode(model, 24, max_len=64)
    mine, m = encore_decode(model, 24, manager=encore.Manager(flags=""), max_len=64)
    assert torch_cuda.equal(mine, eager), (mine.tolist(), eager.tolist())
    r = m.report()
    assert r["captures"] == 1 and r["replays"] == 21 and r["eager_calls"] == 0, r


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "copy"])
def test_hand_graphs_decode_the_tokens_of_eager(torch_cuda, lean):
    # Their warmups advance the cache's own counter; the graph must start
    # at the position after the prompt all the same.
    pytest.importorskip("transformers")
    from llama_decode import eager_decode, graph_decode, make_model
    model = make_model(**MODEL)
    eager = eager_decode(model, 24, max_len=64)
    hand = graph_decode(model, 24, lean=lean, max_len=64)
    assert torch_cuda.equal(hand, eager), (hand.tolist(), eager.tolist())


def _loop(torch, chunk, eos, total, max_len):
    import encore
    from llama_decode import Decoder, make_model
    from llama_loop_decode import LoopDecoder
    model = make_model(**MODEL)
    loop = LoopDecoder(Decoder(model, max_len=max_len), chunk, eos, manager=encore.Manager(flags=""))
    toks, calls = loop.decode(total)
    return loop, toks, calls


@pytest.mark.parametrize("chunk", [4, 16])
def test_llama_decode_loop_decodes_many_chunks_from_replays(torch_cuda, chunk):
    pytest.importorskip("transformers")
    from llama_decode import eager_decode, make_model
    torch = torch_cuda
    total = 5 * chunk + 3  # six calls, the last one cut short
    max_len = 16 + 6 * chunk + 8
    eager = eager_decode(make_model(**MODEL), total, max_len=max_len)
    loop, toks, calls = _loop(torch, chunk, -1, total, max_len)  # the end token never comes
    assert torch.equal(toks, eager), (toks.tolist(), eager.tolist())
    assert calls == 6 and loop.host_reads == calls
    r = loop.method.report()
    # warmup=1: call 1 runs eagerly as the warmup, call 2 captures, 3..6 replay.
    assert r["captures"] == 1 and r["replays"] == calls - 2 and r["eager_calls"] == 0, r


@pytest.mark.parametrize("chunk", [4, 16])
def test_llama_decode_loop_in_one_launch_stops_at_the_end_token(torch_cuda, chunk):
    pytest.importorskip("transformers")
    from llama_decode import eager_decode, make_model
    torch = torch_cuda
    total, max_len = 128, 16 + 128 + 16 + 8
    eager = eager_decode(make_model(**MODEL), total, max_len=max_len)
    # The end token: the one whose first appearance comes latest, so that
    # the loop runs several calls (warmup, capture, replays) before it.
    first = {}
    for i, t in enumerate(eager[0].tolist()):
        first.setdefault(t, i)
    eos = max(first, key=first.get)
    stop = first[eos] + 1
    assert stop > 2 * chunk, f"the decode repeats early: no token first appears after {2 * chunk} ({first})"
    loop, toks, calls = _loop(torch, chunk, eos, total, max_len)
    assert torch.equal(toks, eager[:, :stop]), (toks.tolist(), eager[:, :stop].tolist())
    assert calls == -(-stop // chunk) and calls >= 3
    r = loop.method.report()
    assert r["captures"] == 1 and r["replays"] == calls - 2 and r["eager_calls"] == 0, r
