# SPDX-License-Identifier: Apache-2.0
"""Methods on the GPU: warmups, capture, replay with inputs at new addresses,
results, arguments, constants and errors. Each test checks values."""

import gc
import json
import logging

import pytest

import encore


def _phase_counts(m):
    r = m.report()
    return r["warmup_calls"], r["captures"], r["replays"], r["eager_calls"]


def test_warmup_capture_replay_with_new_addresses(torch_cuda, manager):
    torch = torch_cuda
    runs = []

    def f(x, y):
        runs.append(1)
        return x * 2 + y

    m = manager.method(f, flags="warmup=2")
    for i in range(6):
        x = torch.randn(64, device="cuda")
        y = torch.randn(64, device="cuda")
        out = m(x, y)
        torch.testing.assert_close(out, x * 2 + y, rtol=0, atol=0)
    assert len(runs) == 3  # two warmups and the capture; replays run no Python
    assert _phase_counts(m) == (2, 1, 3, 0)
    r = m.report()
    assert r["phase"] == "replay"
    assert r["binding"] in ("direct", "staged")


def test_results_are_new_tensors_unless_reuse(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: x + 1, name="copy_out", flags="warmup=1")
    x = torch.ones(8, device="cuda")
    outs = [m(x) for _ in range(4)]
    assert len({o.data_ptr() for o in outs}) == 4
    for o in outs:
        assert torch.equal(o, x + 1)
    reuse = manager.method(lambda x: x + 1, name="reuse_out", flags="warmup=1,outputs=reuse")
    outs = [reuse(x) for _ in range(4)]
    assert outs[2].data_ptr() == outs[3].data_ptr()
    assert torch.equal(outs[3], x + 1)
    assert reuse.report()["outputs"] == "reuse"


def test_same_element_count_other_shape_is_refused(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: x.sum(dim=1), name="forward", flags="warmup=0")
    m(torch.ones(2, 3, 4, 4, device="cuda"))
    with pytest.raises(encore.InvalidArgumentError, match=r"method 'forward': input 0 has size 4 in dim 1, "
                                                          r"captured with 3"):
        m(torch.ones(2, 4, 3, 4, device="cuda"))
    out = m(torch.full((2, 3, 4, 4), 2.0, device="cuda"))
    assert torch.equal(out, torch.full((2, 4, 4), 6.0, device="cuda"))


def test_other_non_tensor_value_refused_eager_or_recaptured(torch_cuda, manager):
    torch = torch_cuda

    def scale(x, n):
        return x * n

    refuse = manager.method(scale, name="refuse", flags="warmup=1")
    x = torch.ones(4, device="cuda")
    refuse(x, 2)
    refuse(x, 2)
    with pytest.raises(encore.InvalidArgumentError, match=r"argument 'n' is 3, captured with 2"):
        refuse(x, 3)
    with pytest.raises(encore.InvalidArgumentError, match=r"argument 'n' is 2.0, captured with 2"):
        refuse(x, 2.0)
    assert torch.equal(refuse(x, 2), x * 2)
    eager = manager.method(scale, name="eager", flags="warmup=1,on_new_shape=eager")
    eager(x, 2)
    eager(x, 2)
    assert torch.equal(eager(x, 3), x * 3)
    assert eager.report()["eager_by_reason"].get("new_shape") == 1
    recap = manager.method(scale, name="recapture", flags="warmup=1,on_new_shape=recapture")
    for n in (2, 2, 3, 3, 3, 2):
        assert torch.equal(recap(x, n), x * n)


def test_host_tensor_runs_eagerly(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x, y: x + y.to(x.device), name="host", flags="warmup=0")
    x = torch.ones(4, device="cuda")
    for v in (1.0, 2.0, 3.0):
        out = m(x, torch.full((4,), v))
        assert torch.equal(out, x + v)
    r = m.report()
    assert r["eager_by_reason"]["host_input"] == 3
    assert r["eager_calls"] == 3 and r["captures"] == 0


def test_autograd_runs_eagerly(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: (x * x).sum(), name="grad", flags="warmup=0")
    x = torch.ones(4, device="cuda", requires_grad=True)
    y = m(x)
    y.backward()
    assert torch.equal(x.grad, torch.full((4,), 2.0, device="cuda"))
    assert m.report()["eager_by_reason"]["autograd"] == 1
    with torch.no_grad():
        for _ in range(3):
            assert m(x).item() == 4.0


def test_non_contiguous_zero_element_rank_and_dtype(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: x * 3, name="odd", flags="warmup=1,on_new_shape=recapture")
    base = torch.arange(12.0, device="cuda").reshape(3, 4)
    for _ in range(3):
        t = base.t()
        assert torch.equal(m(t), t * 3)
    empty = torch.empty(0, 5, device="cuda")
    assert m(empty).shape == (0, 5)
    nine = torch.ones([1] * 9, device="cuda")
    assert torch.equal(m(nine), nine * 3)
    c = torch.ones(3, dtype=torch.complex64, device="cuda")
    assert torch.equal(m(c), c * 3)
    assert m.report()["eager_by_reason"]["unsupported_tensor"] == 2


def test_returning_an_input_or_a_view_of_it(torch_cuda, manager):
    torch = torch_cuda
    ident = manager.method(lambda x: x, name="ident", flags="warmup=1")
    view = manager.method(lambda x: x[1:], name="view", flags="warmup=1")
    for i in range(5):
        x = torch.full((4,), float(i), device="cuda")
        a, b = ident(x), view(x)
        assert torch.equal(a, x) and torch.equal(b, x[1:])
        assert a.data_ptr() != x.data_ptr()
        x.fill_(-1)  # the results do not share the input's memory
        assert a[0].item() == float(i) and b[0].item() == float(i)


def test_writing_an_input_in_place(torch_cuda, manager):
    torch = torch_cuda

    def bump(x):
        x.add_(1)
        return x * 2

    m = manager.method(bump, name="bump", flags="warmup=1")
    for i in range(5):
        x = torch.zeros(4, device="cuda")
        out = m(x)
        assert torch.equal(x, torch.ones(4, device="cuda")), f"call {i}: the caller's tensor was not written"
        assert torch.equal(out, torch.full((4,), 2.0, device="cuda"))
    assert "writes_input" in (m.report()["graphs_off_reason"] or "")


def test_constants_from_a_module_and_a_moved_module(torch_cuda, manager):
    torch = torch_cuda
    lin = torch.nn.Linear(8, 8, device="cuda")
    m = manager.method(lambda x: lin(x), name="linear", constants=lin, flags="warmup=1")
    x = torch.randn(2, 8, device="cuda")
    with torch.no_grad():
        for _ in range(4):
            torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)
        lin.weight.mul_(2)  # in place: the graph reads the same storage
        torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)
        lin.cpu().cuda()  # new storage: never read through the old address
        gc.collect()
        torch.cuda.empty_cache()
        lin.weight.mul_(3)
        for _ in range(4):
            torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)
        lin.weight = torch.nn.Parameter(torch.ones(8, 8, device="cuda"))  # replaced
        for _ in range(4):
            torch.testing.assert_close(m(x), lin(x), rtol=0, atol=0)


def test_two_threads_call_one_method(torch_cuda, manager):
    import threading
    torch = torch_cuda
    m = manager.method(lambda x: x * 2, name="threads", flags="warmup=1")
    errors = []

    def work(k):
        try:
            with torch.cuda.stream(torch.cuda.Stream()):
                for i in range(50):
                    x = torch.full((256,), float(k * 1000 + i), device="cuda")
                    out = m(x)
                    if not torch.equal(out, x * 2):
                        errors.append((k, i))
                torch.cuda.current_stream().synchronize()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_method_called_from_its_own_function(torch_cuda, manager):
    torch = torch_cuda
    holder = {}

    def f(x):
        return holder["m"](x) + 1

    holder["m"] = manager.method(f, name="reentrant", flags="warmup=0")
    with pytest.raises(encore.Error):
        holder["m"](torch.ones(2, device="cuda"))


def test_item_inside_runs_eagerly_with_a_reason(torch_cuda, manager):
    torch = torch_cuda

    def f(x):
        return x * float(x.sum().item())

    m = manager.method(f, name="item", flags="warmup=1")
    for i in range(4):
        x = torch.full((4,), float(i + 1), device="cuda")
        assert torch.equal(m(x), x * float(4 * (i + 1)))
    r = m.report()
    assert r["phase"] == "eager" and r["captures"] == 0 and r["capture_failures"] == 1
    assert r["graphs_off_reason"]


def test_random_operations_refused_with_rng(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: x + torch.rand_like(x), name="noise", flags="warmup=1")
    x = torch.zeros(1024, device="cuda")
    outs = [m(x) for _ in range(4)]
    assert not torch.equal(outs[2], outs[3])
    assert "rng" in m.report()["graphs_off_reason"]


def test_a_python_exception_is_raised_from_the_eager_run(torch_cuda, manager):
    torch = torch_cuda

    class Boom(Exception):
        pass

    calls = []

    def f(x):
        calls.append(1)
        if len(calls) >= 2:
            raise Boom("bad input")
        return x

    m = manager.method(f, name="boom", flags="warmup=1")
    x = torch.ones(2, device="cuda")
    m(x)
    with pytest.raises(Boom, match="bad input"):
        m(x)  # the capture raised, the eager run raised again
    r = m.report()
    assert "Boom" in r["graphs_off_reason"]


def test_check_fails_the_next_call_without_poisoning(torch_cuda, manager):
    torch = torch_cuda

    def f(x):
        encore.check((x >= 0).all(), "x must be non-negative")
        return x.sqrt()

    m = manager.method(f, name="checked", flags="warmup=1")
    good = torch.full((4,), 4.0, device="cuda")
    for _ in range(3):
        assert torch.equal(m(good), torch.full((4,), 2.0, device="cuda"))
    m(torch.full((4,), -1.0, device="cuda"))
    with pytest.raises(encore.FailedPreconditionError, match="checked.*x must be non-negative"):
        m(good)
    assert torch.equal(m(good), torch.full((4,), 2.0, device="cuda"))
    assert torch.ones(2, device="cuda").sum().item() == 2.0  # the context is usable


def test_nested_arguments_and_dict_results(torch_cuda, manager):
    torch = torch_cuda

    def f(pair, scale=1.0, *, extra):
        a, b = pair
        return {"sum": a + b, "scaled": (a * scale, extra["t"] - 1), "tag": "ok"}

    m = manager.method(f, name="nested", flags="warmup=1")
    for i in range(4):
        a = torch.full((3,), float(i), device="cuda")
        b = torch.ones(3, device="cuda")
        t = torch.full((2,), 5.0, device="cuda")
        out = m((a, b), 2.0, extra={"t": t})
        assert out["tag"] == "ok"
        assert torch.equal(out["sum"], a + b)
        assert torch.equal(out["scaled"][0], a * 2.0)
        assert torch.equal(out["scaled"][1], t - 1)
    assert m.report()["replays"] == 2


def test_a_call_on_a_side_stream(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: x @ x, name="matmul", flags="warmup=1")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(4):
            x = torch.randn(64, 64, device="cuda")
            torch.testing.assert_close(m(x), x @ x)
    s.synchronize()


def test_events_reach_python_logging(torch_cuda, caplog):
    torch = torch_cuda
    with caplog.at_level(logging.DEBUG, logger="encore"):
        mgr = encore.Manager(flags="")
        m = mgr.method(lambda x: x + 1, name="logged", flags="warmup=1")
        for _ in range(3):
            m(torch.ones(2, device="cuda"))
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "method=logged" in text


def test_default_manager_renames_a_second_method():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")

    def decode(x):
        return x

    a = encore.method(decode)
    b = encore.method(decode)
    assert b.name == a.name + "#" + str(2)  # the next free name
    mgr = encore.Manager(flags="")
    mgr.method(decode, name="d")
    with pytest.raises(encore.InvalidArgumentError, match="already registered"):
        mgr.method(decode, name="d")


def test_report_json_and_dict(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: x + 1, name="rep", flags="warmup=1")
    for _ in range(3):
        m(torch.ones(2, device="cuda"))
    r = manager.report()["rep"]
    assert r["replays"] == 1 and r["captures"] == 1
    j = json.loads(manager.report_json())
    assert j["methods"][0]["name"] == "rep"


def test_private_torch_functions_encore_uses(torch_cuda):
    torch = torch_cuda
    dev = torch._C._cuda_getDevice()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert torch._C._cuda_getCurrentRawStream(dev) == s.cuda_stream
    t = torch.zeros(2, device="cuda")
    v = t._version
    t.add_(1)
    assert t._version == v + 1
    mempool = torch.cuda.MemPool()
    pool = mempool.id
    begin = getattr(torch._C, "_cuda_beginAllocateCurrentThreadToPool")
    end = getattr(torch._C, "_cuda_endAllocateToPool")
    for _ in range(2):  # a routing after the last one's release: the MemPool keeps the pool live
        begin(dev, pool)
        try:
            t_pool = torch.empty(1024, device="cuda")
        finally:
            end(dev, pool)
        del t_pool
        torch._C._cuda_releasePool(dev, pool)
    del mempool
    buf = torch.arange(6.0, device="cuda")
    storage = torch._C._construct_storage_from_data_pointer(buf.data_ptr(), buf.device, 24)
    view = torch.empty((0,), device="cuda").set_(storage, 0, (2, 3), (3, 1))
    assert torch.equal(view, buf.view(2, 3))


def test_many_methods_collected_while_others_run(torch_cuda):
    # Managers and methods dropped with graphs alive, collected while a
    # later method captures: nothing is freed twice or used after it went.
    torch = torch_cuda
    for round_ in range(3):
        mgr = encore.Manager(flags="")
        m = mgr.method(lambda x: x[1:] * 2, name=f"short_lived{round_}", flags="warmup=1")
        for _ in range(3):
            x = torch.arange(8.0, device="cuda")
            assert torch.equal(m(x), x[1:] * 2)
        del m, mgr
        gc.collect()
    assert torch.ones(1, device="cuda").item() == 1.0


def test_the_python_examples_run(torch_cuda):
    import subprocess
    import sys
    from pathlib import Path
    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "quickstart.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "phase=replay" in done.stdout and "replays=6" in done.stdout, done.stdout


def test_stages_graph_pieces_around_an_eager_stage(torch_cuda, manager):
    torch = torch_cuda
    host = []

    def scale(x):
        return x * 2

    def shift(y):  # host work every call: a value the graph could not keep
        host.append(1)
        return y + float(len(host))

    def total(z):
        return z.sum(dim=0)

    m = manager.method(stages=[scale, encore.eager(shift), total], name="staged", flags="warmup=1")
    for i in range(6):
        x = torch.randn(16, 8, device="cuda")
        torch.testing.assert_close(m(x), (x * 2 + float(i + 1)).sum(dim=0))
    assert len(host) == 6
    r = m.report()
    assert [p["stages"] for p in r["pieces"]] == [["scale"], ["total"]]
    assert all(p["graphed"] for p in r["pieces"]), r["pieces"]
    assert all(p["replays"] == 4 for p in r["pieces"]), r["pieces"]


def test_a_stage_that_refuses_capture_goes_eager_alone(torch_cuda, manager):
    torch = torch_cuda

    def first(x):
        return x + 1

    def host_scaled(y):
        return y * float(y.sum().item())  # a host read: not capturable

    m = manager.method(stages=[first, encore.eager(lambda v: v * 1), host_scaled], name="partly",
                       flags="warmup=1")
    for i in range(5):
        x = torch.full((4,), float(i), device="cuda")
        y = x + 1
        torch.testing.assert_close(m(x), y * float(y.sum().item()))
    pieces = m.report()["pieces"]
    assert pieces[0]["graphed"] and not pieces[1]["graphed"], pieces
    assert pieces[1]["reason"]


def _counting_loop(torch):
    def f(n, x):
        i0 = torch.zeros((), dtype=torch.int64, device="cuda")
        _, acc = encore.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + 2.0), (i0, x),
                                   max_iterations=64)
        return acc
    return f


def test_while_loop_iterations_decided_on_the_device(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(_counting_loop(torch), name="loop", flags="warmup=1")
    x = torch.ones(4, device="cuda")
    for n in (3, 0, 1, 5, 0, 1, 17, 2):
        nt = torch.tensor(n, device="cuda")
        out = m(nt, x)
        assert torch.equal(out, x + 2.0 * n), (n, out)
        assert torch.equal(x, torch.ones(4, device="cuda"))  # carried inputs are never written
    r = m.report()
    assert r["captures"] == 1 and r["replays"] == 6 and r["eager_calls"] == 0, r


def test_a_runaway_loop_stops_at_its_bound(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(_counting_loop(torch), name="runaway", flags="warmup=1")
    x = torch.zeros(2, device="cuda")
    for n in (2, 3, 4):
        assert torch.equal(m(torch.tensor(n, device="cuda"), x), x + 2.0 * n)
    m(torch.tensor(1000, device="cuda"), x)  # stops after 64 iterations
    with pytest.raises(encore.FailedPreconditionError, match=r"method .runaway.: a While loop reached its bound of 64"):
        m(torch.tensor(1, device="cuda"), x)
    assert torch.equal(m(torch.tensor(1, device="cuda"), x), x + 2.0)  # the context is usable


def test_a_branch_that_flips_between_replays(torch_cuda, manager):
    torch = torch_cuda

    def f(flag, x):
        return encore.cond(flag, lambda v: v * 2, lambda v: v - 1, (x,))

    m = manager.method(f, name="branch", flags="warmup=1")
    x = torch.arange(4.0, device="cuda")
    for b in (True, False, True, True, False, False, True):
        out = m(torch.tensor(b, device="cuda"), x)
        assert torch.equal(out, x * 2 if b else x - 1), (b, out)
    assert m.report()["replays"] == 5


def test_cond_and_while_loop_outside_a_method(torch_cuda):
    torch = torch_cuda
    x = torch.ones(3, device="cuda")
    assert torch.equal(encore.cond(torch.tensor(False, device="cuda"), lambda v: v, lambda v: -v, (x,)), -x)
    i, = encore.while_loop(lambda i: i < 5, lambda i: (i + 1,), (torch.tensor(0, device="cuda"),),
                           max_iterations=10)
    assert i.item() == 5
    with pytest.raises(encore.FailedPreconditionError, match="max_iterations=3"):
        encore.while_loop(lambda i: i < 5, lambda i: (i + 1,), (torch.tensor(0, device="cuda"),), max_iterations=3)
    with pytest.raises(encore.InvalidArgumentError, match="in place"):
        encore.while_loop(lambda t: t.sum() < 5, lambda t: (t.add_(1),), (torch.zeros(2, device="cuda"),),
                          max_iterations=10)
    with pytest.raises(encore.InvalidArgumentError, match="tensors, never Python numbers"):
        encore.while_loop(lambda i: i < 5, lambda i: (i + 1,), (0,), max_iterations=10)
