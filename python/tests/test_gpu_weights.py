# SPDX-License-Identifier: Apache-2.0
"""Weights that change under a Python method's graphs: moved to storage of
the same shape, dtype and strides, they are rebound (no warmup, no
capture) and results follow the new values, never the old addresses;
anything else captures again."""

import gc
import logging

import pytest

import encore


@pytest.fixture(autouse=True)
def _encore_info(caplog):
    """encore's info lines (event=rebound, event=rebind_recapture with its
    reason, event=binding_probe) in every failure's captured log."""
    caplog.set_level(logging.INFO, logger="encore")


def _why(caplog):
    return [r.getMessage() for r in caplog.records
            if any(e in r.getMessage() for e in ("rebind", "binding", "capture_failed", "released"))]


def _model(torch):
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64, device="cuda")
    lin.register_buffer("shift", torch.zeros(64, device="cuda"))
    return lin


def _f(lin):
    def f(x):
        return lin(x) + lin.shift
    return f


def _captured(torch, manager, name, flags="warmup=1"):
    lin = _model(torch)
    f = _f(lin)
    m = manager.method(f, name=name, constants=lin, flags=flags)
    x = torch.randn(8, 64, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
    r = m.report()
    assert r["captures"] == 1 and r["replays"] >= 1, r
    return lin, f, m, x


def _squat(torch):
    """Frees what can be freed and fills the allocator's free blocks with
    other values, so a graph reading an old address would see them."""
    gc.collect()
    return [torch.full((64, 64), 1e4, device="cuda") for _ in range(16)]


@pytest.mark.parametrize("how", ["load_state_dict_assign", "parameter_replaced", "buffer_replaced", "data_set",
                                 "cpu_cuda"])
def test_weights_in_new_storage_are_rebound_without_a_capture(torch_cuda, manager, how, caplog):
    # Linear's weight (16 KiB) ends where its bias begins in the caching
    # allocator's segment: a word naming the bias is not the old weight's end
    # pointer (parameter_replaced, cpu_cuda).
    torch = torch_cuda
    lin, f, m, x = _captured(torch, manager, f"rebind_{how}")
    r = m.report()
    assert r["binding"] == "direct", (r["binding_reason"], _why(caplog))
    with torch.no_grad():
        if how == "load_state_dict_assign":
            lin.load_state_dict({k: torch.randn_like(v) for k, v in lin.state_dict().items()}, assign=True)
        elif how == "parameter_replaced":
            lin.weight = torch.nn.Parameter(torch.randn(64, 64, device="cuda"))
        elif how == "buffer_replaced":
            lin.shift = torch.full((64,), 3.0, device="cuda")
        elif how == "data_set":
            lin.bias.data = torch.randn(64, device="cuda")
        else:
            lin.cpu().cuda()
            lin.weight.mul_(2)
        squatters = _squat(torch)
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        del squatters
    r = m.report()
    assert r["rebinds"] >= 1, (r, _why(caplog))
    assert r["captures"] == 1 and r["warmup_calls"] == 1 and r["replays"] >= 4, (r, _why(caplog))
    assert r["graphs_off_reason"] is None and r["eager_calls"] == 0, r


def test_a_staged_graph_whose_weights_moved_is_captured_again_and_replays(torch_cuda, manager, caplog):
    # The rebind drops a staged graph (SPEC: it recaptures); the capture after
    # it routes to the method's pool, whose last graph just went: PyTorch
    # asserted there (use_count > 0) when the pool was a bare handle, and the
    # method ran eagerly from then on.
    torch = torch_cuda
    lin, f, m, x = _captured(torch, manager, "rebind_staged", flags="warmup=1,binding=staged")
    with torch.no_grad():
        for sync in range(3):
            lin.load_state_dict({k: torch.randn_like(v) for k, v in lin.state_dict().items()}, assign=True)
            squatters = _squat(torch)
            for _ in range(3):
                torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
            del squatters
    r = m.report()
    assert r["graphs_off_reason"] is None and r["capture_failures"] == 0, (r, _why(caplog))
    assert r["captures"] == 4 and r["rebinds"] == 0 and r["replays"] >= 1 + 3 * 1, (r, _why(caplog))


def test_a_capture_after_an_eviction_and_after_release_routes_to_a_live_pool(torch_cuda, caplog):
    # Graphs dropped by encore itself (max_graphs=1: a new shape's graph
    # takes the place of the other's) and by Method.release(): every later
    # capture succeeds.
    torch = torch_cuda
    lin = _model(torch)
    f = _f(lin)
    mgr = encore.Manager(flags="")
    m = mgr.method(f, name="pool_reuse", constants=lin, flags="warmup=1,max_graphs=1,on_new_shape=recapture")
    with torch.no_grad():
        for rows in (8, 16, 8, 16):  # max_graphs=1: each new shape drops the other's graph
            x = torch.randn(rows, 64, device="cuda")
            for _ in range(3):
                torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        m.release()
        x = torch.randn(8, 64, device="cuda")
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
    r = m.report()
    assert r["graphs_off_reason"] is None and r["capture_failures"] == 0, (r, _why(caplog))
    # on_new_shape=recapture: the captures after the first count as recaptures
    assert r["captures"] + r["recaptures"] == 5 and r["replays"] >= 5, (r, _why(caplog))  # each evicted the other


def test_twenty_syncs_follow_the_new_weights(torch_cuda, manager, caplog):
    torch = torch_cuda
    lin, f, m, x = _captured(torch, manager, "rebind_syncs")
    with torch.no_grad():
        for _ in range(20):
            lin.load_state_dict({k: torch.randn_like(v) for k, v in lin.state_dict().items()}, assign=True)
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
    r = m.report()
    assert r["rebinds"] == 20 and r["captures"] == 1, (r, _why(caplog))


def test_a_constant_of_another_size_captures_again(torch_cuda, manager):
    torch = torch_cuda
    lin, f, m, x = _captured(torch, manager, "rebind_resized")
    with torch.no_grad():
        lin.shift = torch.zeros(1, device="cuda")  # broadcasts: another size, the same results' shapes
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
    r = m.report()
    assert r["captures"] == 2 and r["rebinds"] == 0, r


def test_rebind_under_pad_buckets(torch_cuda, manager):
    torch = torch_cuda
    lin = _model(torch)
    f = _f(lin)
    m = manager.method(f, name="rebind_pad", constants=lin, flags="on_new_shape=pad,buckets=4|8,warmup=1")
    with torch.no_grad():
        for b in (3, 8, 5, 2):
            x = torch.randn(b, 64, device="cuda")
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        lin.load_state_dict({k: torch.randn_like(v) for k, v in lin.state_dict().items()}, assign=True)
        squatters = _squat(torch)
        for b in (3, 8, 5, 2):
            x = torch.randn(b, 64, device="cuda")
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        del squatters


def test_rebind_under_stages(torch_cuda, manager):
    torch = torch_cuda
    lin = _model(torch)

    def first(x):
        return lin(x)

    def second(y):
        return y + lin.shift

    m = manager.method(stages=[first, encore.eager(lambda y: y * 1.0), second], name="rebind_stages",
                       constants=lin, flags="warmup=1")
    x = torch.randn(8, 64, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(m(x), lin(x) + lin.shift, rtol=0, atol=0)
        lin.load_state_dict({k: torch.randn_like(v) for k, v in lin.state_dict().items()}, assign=True)
        squatters = _squat(torch)
        for _ in range(3):
            torch.testing.assert_close(m(x), lin(x) + lin.shift, rtol=0, atol=0)
        del squatters


def test_sleep_gives_memory_back_and_wake_replays_without_a_capture(torch_cuda):
    torch = torch_cuda
    lin = _model(torch)
    f = _f(lin)
    mgr = encore.Manager(flags="")
    # Padded graphs are staged: their static inputs and outputs are encore's
    # own graph memory, which a sleep gives back.
    m = mgr.method(f, name="sleeper", constants=lin, flags="on_new_shape=pad,buckets=256|1024,warmup=1")
    xs = [torch.randn(b, 64, device="cuda") for b in (200, 1000, 7)]
    # A padded bucket's GEMM runs at the bucket's rows, eager at the call's:
    # cuBLAS may pick another kernel, so results agree to rounding, not bits.
    with torch.no_grad():
        for x in xs + xs:
            torch.testing.assert_close(m(x), f(x))
        before = m.report()
        torch.cuda.synchronize()
        free_awake, _ = torch.cuda.mem_get_info()
        given = mgr.sleep()
        assert mgr.asleep and given > 0
        free_asleep, _ = torch.cuda.mem_get_info()
        assert free_asleep - free_awake >= 0.9 * given, (free_awake, free_asleep, given)
        mgr.wake()
        assert not mgr.asleep
        for x in xs:
            torch.testing.assert_close(m(x), f(x))
        mgr.sleep()
        torch.testing.assert_close(m(xs[0]), f(xs[0]))  # a call while asleep wakes first
        assert not mgr.asleep
    after = m.report()
    assert after["captures"] == before["captures"] and after["replays"] == before["replays"] + 4, (before, after)


def test_sleep_waits_for_captures_pending_in_the_background(torch_cuda):
    torch = torch_cuda
    lin = _model(torch)
    f = _f(lin)
    mgr = encore.Manager(flags="")
    m = mgr.method(f, name="bg_sleeper", constants=lin, flags="capture=background,warmup=1")
    x = torch.randn(8, 64, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        mgr.sleep()
        mgr.wake()
        mgr.synchronize_captures()
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
    r = m.report()
    assert r["background_captures"] >= 1 and r["replays"] >= 1, r
