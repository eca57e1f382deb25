# SPDX-License-Identifier: Apache-2.0
"""transformers' LlamaForCausalLM (random weights, StaticCache) decoded
greedily under encore: the same tokens as eager decoding, from replays."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python"))


def test_llama_decode_tokens_equal_eager(torch_cuda):
    pytest.importorskip("transformers")
    import encore
    from llama_decode import eager_decode, encore_decode, make_model
    model = make_model(layers=2, hidden=256, vocab=512, heads=4, kv_heads=2)
    eager = eager_decode(model, 24, max_len=64)
    mine, m = encore_decode(model, 24, manager=encore.Manager(flags=""), max_len=64)
    assert torch_cuda.equal(mine, eager), (mine.tolist(), eager.tolist())
    r = m.report()
    assert r["captures"] == 1 and r["replays"] == 21 and r["eager_calls"] == 0, r


@pytest.mark.parametrize("chunk", [4, 16])
def test_llama_decode_loop_in_one_launch_stops_at_the_end_token(torch_cuda, chunk):
    pytest.importorskip("transformers")
    import encore
    from llama_decode import Decoder, eager_decode, make_model
    from llama_loop_decode import LoopDecoder
    torch = torch_cuda
    model = make_model(layers=2, hidden=256, vocab=512, heads=4, kv_heads=2)
    total, max_len = 40, 96
    eager = eager_decode(model, total, max_len=max_len)
    eos = int(eager[0, 25])
    stop = int((eager[0] == eos).nonzero()[0]) + 1  # the first time the end token comes
    loop = LoopDecoder(Decoder(model, max_len=max_len), chunk, eos, manager=encore.Manager(flags=""))
    toks, calls = loop.decode(total)
    assert torch.equal(toks, eager[:, :stop]), (toks.tolist(), eager[:, :stop].tolist())
    assert calls == -(-stop // chunk)
    r = loop.method.report()
    assert r["captures"] == (1 if calls >= 2 else 0) and r["eager_calls"] == 0, r
    assert r["replays"] == max(calls - 2, 0)
