# SPDX-License-Identifier: Apache-2.0
"""Replays of calls like the last replay's (which the C++ fast path serves)
on the GPU, seen through what a caller sees: results equal the function's,
new tensors on every call, every such call a replay in report(); and a call
unlike the replay (another shape, dtype or device, grad to record) gets the
answer the method gives it otherwise, after which the replays go on."""

import pytest

import encore


def test_replays_with_several_results_return_new_tensors_every_call(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x, y: (x * 2 + y, x - y), name="two_results", constants=[], flags="warmup=1")
    kept = []
    for i in range(8):
        x, y = torch.randn(32, device="cuda"), torch.randn(32, device="cuda")
        kept.append((x, y) + tuple(m(x, y)))
        # The warmup, the capture, then every call a replay, inputs at new addresses.
        assert m.report()["replays"] == max(0, i - 1)
    for x, y, a, b in kept:  # no later call wrote over an earlier call's results
        assert torch.equal(a, x * 2 + y) and torch.equal(b, x - y)
    ptrs = [t.data_ptr() for _, _, a, b in kept for t in (a, b)]
    assert len(set(ptrs)) == len(ptrs)
    r = m.report()
    assert (r["captures"], r["replays"], r["eager_calls"]) == (1, 6, 0), r


def test_a_call_with_grad_to_record_runs_eagerly_between_replays(torch_cuda, manager):
    torch = torch_cuda
    lin = torch.nn.Linear(4, 4, device="cuda")
    m = manager.method(lambda x: lin(x), name="linear_grad", constants=lin, flags="warmup=1")
    x = torch.randn(2, 4, device="cuda")
    with torch.no_grad():
        for _ in range(4):
            torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)
    assert m.report()["replays"] == 2
    y = m(x)  # grad mode on and the parameters require grad: autograd must see the call
    assert y.requires_grad
    y.sum().backward()
    assert lin.weight.grad is not None
    r = m.report()
    assert r["eager_by_reason"].get("autograd") == 1 and r["replays"] == 2, r
    with torch.no_grad():
        torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)
    assert m.report()["replays"] == 3


@pytest.mark.parametrize("other", ["shape", "dtype", "host"])
def test_a_call_unlike_the_replay_gets_the_methods_answer_and_replays_go_on(torch_cuda, manager, other):
    torch = torch_cuda
    m = manager.method(lambda x: x + 1, name="plus_one", constants=[], flags="warmup=1")
    x = torch.ones(8, device="cuda")
    for _ in range(4):
        assert torch.equal(m(x), x + 1)
    assert m.report()["replays"] == 2
    if other == "shape":
        with pytest.raises(encore.InvalidArgumentError, match="method 'plus_one': input 0"):
            m(torch.ones(9, device="cuda"))
    elif other == "dtype":
        with pytest.raises(encore.InvalidArgumentError, match="method 'plus_one': input 0 has dtype float16"):
            m(torch.ones(8, device="cuda", dtype=torch.float16))
    else:
        assert torch.equal(m(torch.ones(8)), torch.full((8,), 2.0))
        assert m.report()["eager_by_reason"]["host_input"] == 1
    r = m.report()
    assert r["replays"] == 2 and r["refusals"] == (0 if other == "host" else 1), r
    assert torch.equal(m(x), x + 1)  # and the replays go on
    r = m.report()
    assert r["replays"] == 3 and r["captures"] == 1, r
