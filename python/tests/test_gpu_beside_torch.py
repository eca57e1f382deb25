# SPDX-License-Identifier: Apache-2.0
"""encore beside the rest of PyTorch: a torch.compile'd function compiles as
often with encore methods in the process as without; constants that move in
any way are found without a process-wide hook; conditional nodes are
captured when their branches or loop bodies never ran in a warmup."""

import gc

import pytest

import encore


def _layered(torch):
    """A model whose forward slices its ModuleList (a new ModuleList per
    call, as transformers' decoders do), which registers submodules inside
    the traced code."""

    class Layered(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(3))

        def forward(self, x):
            for layer in self.layers[:2]:
                x = torch.relu(layer(x))
            return x

    return Layered().cuda().eval()


def _compiles(torch, mode, encore_method, calls=6):
    """(frames dynamo compiled, calls it captured) for a compiled model
    called `calls` times; `encore_method` is None (no encore), "before" (an
    encore method listing a module exists before the model is compiled) or
    "after" (made after its first call); its calls go between the compiled
    model's."""
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    model = _layered(torch)
    x = torch.randn(4, 32, device="cuda")
    lin = torch.nn.Linear(32, 32, device="cuda")

    def make():
        return encore.Manager(flags="").method(lambda v: lin(v), name="beside", constants=[lin, model],
                                               flags="warmup=1")

    m = make() if encore_method == "before" else None
    compiled = torch.compile(model, mode=mode)
    with torch.no_grad():
        compiled(x)
        if encore_method == "after":
            m = make()
        for _ in range(calls):
            y = compiled(x)
            if m is not None:
                torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)
        torch.testing.assert_close(y, model(x), rtol=1e-3, atol=1e-3)
    if m is not None:
        assert m.report()["replays"] >= calls - 2, m.report()
    return counters["stats"]["unique_graphs"], counters["stats"]["calls_captured"]


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("order", ["before", "after"])
def test_a_compiled_model_compiles_as_often_with_encore(torch_cuda, mode, order):
    torch = torch_cuda
    without = _compiles(torch, mode, None)
    with_encore = _compiles(torch, mode, order)
    assert without[0] >= 1
    assert with_encore == without, f"dynamo compiled {with_encore} with encore, {without} without"


def test_a_compiled_transformers_decode_beside_an_encore_method(torch_cuda):
    pytest.importorskip("transformers")
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python"))
    from llama_decode import Decoder, eager_decode, encore_method, make_model
    from torch._dynamo.utils import counters
    torch = torch_cuda
    model = make_model(layers=2, hidden=256, vocab=512, heads=4, kv_heads=2)
    steps = 12
    eager = eager_decode(model, steps, max_len=64)

    def decode(with_encore):
        torch._dynamo.reset()
        counters.clear()
        d = Decoder(model, max_len=64)
        step = torch.compile(d.step)
        other = Decoder(model, max_len=64) if with_encore else None
        m = encore_method(other, manager=encore.Manager(flags="")) if with_encore else None
        tok = d.first
        mine = other.first if with_encore else None
        out, theirs = [], []
        with torch.no_grad():
            for i in range(steps):
                p = d.start + i
                tok = step(tok, d.positions[p:p + 1])
                out.append(tok)
                if m is not None:
                    mine = m(mine, other.positions[p:p + 1])
                    theirs.append(mine)
        if m is not None:
            assert torch.equal(torch.cat(theirs, dim=1), eager)
            assert m.report()["replays"] == steps - 3, m.report()
        return counters["stats"]["unique_graphs"], torch.cat(out, dim=1)

    alone, alone_tokens = decode(False)
    beside, beside_tokens = decode(True)
    assert beside == alone, f"the compiled decode compiled {beside} graphs beside encore, {alone} alone"
    assert torch.equal(beside_tokens, alone_tokens)


def test_making_and_calling_a_method_changes_nothing_in_pytorch(torch_cuda):
    torch = torch_cuda
    mod = torch.nn.modules.module
    hooks = [getattr(mod, name) for name in ("_global_module_registration_hooks",
                                             "_global_parameter_registration_hooks",
                                             "_global_buffer_registration_hooks") if hasattr(mod, name)]
    before = [dict(h) for h in hooks]
    apply_before = torch.nn.Module._apply
    lin = torch.nn.Linear(8, 8, device="cuda")
    m = encore.Manager(flags="").method(lambda v: lin(v), name="untouched", constants=lin, flags="warmup=1")
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(2, 8, device="cuda"))
    assert [dict(h) for h in hooks] == before
    assert torch.nn.Module._apply is apply_before


def _follows(torch, m, lin, x, calls=3):
    for _ in range(calls):
        torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)


@pytest.mark.parametrize("how", ["data_set", "load_state_dict_assign", "parameter_replaced", "buffer_replaced",
                                 "cpu_cuda", "to_dtype_and_back"])
def test_a_moved_constant_is_never_read_through_its_old_address(torch_cuda, manager, how):
    torch = torch_cuda
    lin = torch.nn.Linear(16, 16, device="cuda")
    lin.register_buffer("shift", torch.ones(16, device="cuda"))

    def f(v):
        return lin(v) + lin.shift

    m = manager.method(f, name=f"moved_{how}", constants=lin, flags="warmup=1")
    x = torch.randn(4, 16, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        assert m.report()["replays"] >= 1
        if how == "data_set":
            lin.weight.data = torch.randn(16, 16, device="cuda")
        elif how == "load_state_dict_assign":
            sd = {k: torch.randn_like(v) for k, v in lin.state_dict().items()}
            lin.load_state_dict(sd, assign=True)
        elif how == "parameter_replaced":
            lin.weight = torch.nn.Parameter(torch.randn(16, 16, device="cuda"))
        elif how == "buffer_replaced":
            lin.shift = torch.full((16,), 5.0, device="cuda")
        elif how == "cpu_cuda":
            lin.cpu().cuda()
            lin.weight.mul_(3)
        else:
            lin.double().float()
            lin.weight.mul_(-1)
        # The old storage freed and its addresses taken by other tensors
        # with other values: a read through an old address would see them.
        gc.collect()
        squatters = [torch.full((16, 16), 1e6, device="cuda") for _ in range(8)]
        for _ in range(4):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        del squatters


def test_constants_from_a_dict_and_a_tensor_that_moved(torch_cuda, manager):
    torch = torch_cuda
    table = {"scale": torch.full((8,), 2.0, device="cuda")}
    bias = torch.ones(8, device="cuda")

    def f(v):
        return v * table["scale"] + bias

    m = manager.method(f, name="dict_constants", constants=[table, bias], flags="warmup=1")
    x = torch.arange(8.0, device="cuda")
    for _ in range(3):
        assert torch.equal(m(x), f(x))
    table["scale"] = torch.full((8,), 3.0, device="cuda")  # replaced in the listed dict
    assert torch.equal(m(x), x * 3 + 1)
    bias.data = torch.full((8,), 7.0, device="cuda")  # a listed tensor's storage changed
    for _ in range(3):
        assert torch.equal(m(x), x * 3 + 7)


def _loop_with_a_branch(torch):
    """Adds 1 to acc n times; in each iteration, doubles it too when it is
    above 4 (a branch that the first calls never take)."""

    def f(n, x):
        def body(i, acc):
            acc = acc + 1.0
            acc = encore.cond(acc.sum() > 4 * acc.numel(), lambda a: a * 2.0, lambda a: a + 0.0, (acc,))
            return i + 1, acc

        _, acc = encore.while_loop(lambda i, acc: i < n, body, (torch.zeros((), dtype=torch.int64, device="cuda"),
                                                                 x.clone()), max_iterations=64)
        return acc

    return f


def _expected(torch, n, x):
    acc = x.clone()
    for _ in range(n):
        acc = acc + 1.0
        acc = acc * 2.0 if bool(acc.sum() > 4 * acc.numel()) else acc
    return acc


@pytest.mark.parametrize("warmup", [0, 1, 2])
def test_a_loop_that_never_ran_in_a_warmup_is_captured(torch_cuda, manager, warmup):
    torch = torch_cuda
    m = manager.method(_loop_with_a_branch(torch), name=f"cold_loop_{warmup}", flags=f"warmup={warmup}")
    x = torch.zeros(4, device="cuda")
    zero = torch.tensor(0, device="cuda")
    for _ in range(warmup + 1):  # every warmup and the capture: 0 iterations, the cond never called
        assert torch.equal(m(zero, x), x)
    r = m.report()
    assert r["captures"] == 1 and r["phase"] == "replay", r
    for n in (1, 3, 5, 0, 9, 2):
        out = m(torch.tensor(n, device="cuda"), x)
        assert torch.equal(out, _expected(torch, n, x)), (n, out)
    r = m.report()
    assert r["replays"] == 6 and r["eager_calls"] == 0 and r["capture_failures"] == 0, r


def test_a_branch_not_taken_in_the_warmups_is_captured(torch_cuda, manager):
    torch = torch_cuda

    def f(flag, x):
        return encore.cond(flag, lambda v: (v * 2, v.sum()), lambda v: (v - 1, v.amax()), (x,))

    m = manager.method(f, name="cold_branch", flags="warmup=2")
    x = torch.arange(4.0, device="cuda")
    off = torch.tensor(False, device="cuda")
    for _ in range(3):  # the warmups and the capture take the false branch only
        a, b = m(off, x)
        assert torch.equal(a, x - 1) and torch.equal(b, x.amax())
    on = torch.tensor(True, device="cuda")
    a, b = m(on, x)
    assert torch.equal(a, x * 2) and torch.equal(b, x.sum())
    r = m.report()
    assert r["captures"] == 1 and r["replays"] == 1 and r["eager_calls"] == 0, r


def test_branches_of_other_shapes_are_named(torch_cuda, manager):
    torch = torch_cuda

    def f(flag, x):
        return encore.cond(flag, lambda v: v * 2, lambda v: v[:2], (x,))

    m = manager.method(f, name="mismatched_branches", flags="warmup=0")
    x = torch.arange(4.0, device="cuda")
    # The capture fails, naming both branches' results; the call runs
    # eagerly (the true branch alone) and graphs stay off.
    assert torch.equal(m(torch.tensor(True, device="cuda"), x), x * 2)
    r = m.report()
    assert r["capture_failures"] == 1 and r["phase"] == "eager", r
    assert "false_fn returned [(2,) torch.float32]" in r["graphs_off_reason"], r["graphs_off_reason"]
    assert "[(4,) torch.float32]" in r["graphs_off_reason"]
