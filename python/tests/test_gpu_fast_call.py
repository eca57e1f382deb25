# SPDX-License-Identifier: Apache-2.0
"""The C++ fast path of replays on the GPU: it serves calls like the last
replay's, returns what the general path would, and leaves to the general
path every call that path would run otherwise."""

import pytest

import encore


def test_replays_take_the_fast_path_with_several_results(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x, y: (x * 2 + y, x - y), name="two_results", constants=[], flags="warmup=1")
    for _ in range(8):
        x, y = torch.randn(32, device="cuda"), torch.randn(32, device="cuda")
        a, b = m(x, y)
        assert torch.equal(a, x * 2 + y) and torch.equal(b, x - y)
        assert a.data_ptr() != b.data_ptr()
    assert m._fast is not None
    r = m.report()
    assert (r["captures"], r["replays"], r["eager_calls"]) == (1, 6, 0)


def test_a_call_with_grad_to_record_runs_eagerly_after_fast_replays(torch_cuda, manager):
    torch = torch_cuda
    lin = torch.nn.Linear(4, 4, device="cuda")
    m = manager.method(lambda x: lin(x), name="linear_grad", constants=lin, flags="warmup=1")
    x = torch.randn(2, 4, device="cuda")
    with torch.no_grad():
        for _ in range(4):
            torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)
    assert m._fast is not None
    y = m(x)  # grad mode on and the parameters require grad: autograd must see the call
    assert y.requires_grad
    y.sum().backward()
    assert lin.weight.grad is not None
    assert m.report()["eager_by_reason"].get("autograd") == 1


@pytest.mark.parametrize("other", ["shape", "dtype", "host"])
def test_a_call_unlike_the_replay_gets_the_general_paths_answer(torch_cuda, manager, other):
    torch = torch_cuda
    m = manager.method(lambda x: x + 1, name="plus_one", constants=[], flags="warmup=1")
    x = torch.ones(8, device="cuda")
    for _ in range(4):
        m(x)
    assert m._fast is not None
    if other == "shape":
        with pytest.raises(encore.InvalidArgumentError, match="method 'plus_one': input 0"):
            m(torch.ones(9, device="cuda"))
    elif other == "dtype":
        with pytest.raises(encore.InvalidArgumentError, match="method 'plus_one': input 0 has dtype float16"):
            m(torch.ones(8, device="cuda", dtype=torch.float16))
    else:
        assert torch.equal(m(torch.ones(8)), torch.full((8,), 2.0))
        assert m.report()["eager_by_reason"]["host_input"] == 1
    assert torch.equal(m(x), x + 1)  # and the replays go on
