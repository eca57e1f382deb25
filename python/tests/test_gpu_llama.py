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
