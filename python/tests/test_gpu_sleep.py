# SPDX-License-Identifier: Apache-2.0
"""Manager.sleep() gives back a Python method's memory, its intermediates
included (PyTorch's capture pool over encore's memory: python/src/
py_torch_pool.h), as the device sees it (torch.cuda.mem_get_info); wake maps
memory back at the same addresses and the graphs replay with no capture;
memory others take while asleep is never written by a graph."""

import gc
import logging

import pytest

import encore


@pytest.fixture(autouse=True)
def _encore_info(caplog):
    caplog.set_level(logging.INFO, logger="encore")


def _log(caplog):
    return [r.getMessage() for r in caplog.records if "torch_pool" in r.getMessage() or "wake" in r.getMessage()]


def _mlp(torch, width=2048):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, width),
                               torch.nn.GELU(), torch.nn.Linear(width, width)).cuda()


def _captured(torch, mgr, name, model, rows=1024, flags="warmup=1"):
    f = model.forward
    m = mgr.method(f, name=name, constants=model, flags=flags)
    x = torch.randn(rows, model[0].in_features, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
    r = m.report()
    assert r["captures"] == 1 and r["replays"] >= 1 and r["graphs_off_reason"] is None, r
    return m, f, x


def _free(torch):
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return torch.cuda.mem_get_info()[0]


def test_sleep_gives_back_the_intermediates_and_wake_replays_with_no_capture(torch_cuda, caplog):
    torch = torch_cuda
    model = _mlp(torch)
    mgr = encore.Manager(flags="")
    m, f, x = _captured(torch, mgr, "mlp_sleeper", model)
    before = m.report()
    # The capture's intermediates (four 8 MiB activations at 1024 x 2048)
    # are PyTorch's segments over encore's memory.
    held = before["graph_memory_bytes"] + before["torch_pool_bytes"]
    assert before["torch_pool_bytes"] >= 16 << 20, (before, _log(caplog))
    free_awake = _free(torch)
    given = mgr.sleep()
    assert mgr.asleep and given >= before["torch_pool_bytes"], (given, before)
    free_asleep = _free(torch)
    assert free_asleep - free_awake >= 0.9 * held, (free_awake, free_asleep, held, given)
    # Others take memory while asleep; no graph may write it.
    with torch.no_grad():
        squatters = [torch.full((1 << 20,), 7.0, device="cuda") for _ in range(8)]
        mgr.wake()
        assert not mgr.asleep
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
        torch.cuda.synchronize()
        assert all(bool((s == 7.0).all()) for s in squatters)
    after = m.report()
    assert after["captures"] == before["captures"] and after["replays"] == before["replays"] + 3, (before, after)
    assert after["torch_pool_bytes"] == before["torch_pool_bytes"], (before, after)


def test_a_call_while_asleep_wakes_the_pools_first(torch_cuda, caplog):
    # The call that finds the manager asleep takes the replay's fast path
    # no more: the general path maps the pools back before anything
    # launches, then the graph replays.
    torch = torch_cuda
    model = _mlp(torch, width=1024)
    mgr = encore.Manager(flags="")
    m, f, x = _captured(torch, mgr, "woken_by_a_call", model, rows=512)
    before = m.report()
    with torch.no_grad():
        for _ in range(2):
            mgr.sleep()
            assert mgr.asleep
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
            assert not mgr.asleep
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)  # the fast path again
    after = m.report()
    assert after["captures"] == before["captures"] and after["replays"] == before["replays"] + 4, (before, after,
                                                                                                    _log(caplog))


def test_every_method_and_piece_of_a_manager_sleeps_and_a_second_sleep_gives_nothing_more(torch_cuda, caplog):
    torch = torch_cuda
    a, b = _mlp(torch, width=1024), _mlp(torch, width=1024)
    mgr = encore.Manager(flags="")
    m1, f1, x = _captured(torch, mgr, "first", a, rows=512)
    staged = mgr.method(stages=[a.forward, encore.eager(lambda y: y * 1.0), b.forward], name="staged",
                        constants=[a, b], flags="warmup=1")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(staged(x), b(a(x)), rtol=0, atol=0)
    pool_bytes = m1.report()["torch_pool_bytes"] + staged.report()["torch_pool_bytes"]
    given = mgr.sleep()
    assert given >= pool_bytes > 0, (given, pool_bytes)
    assert mgr.sleep() == 0  # asleep already
    mgr.wake()
    with torch.no_grad():
        torch.testing.assert_close(m1(x), f1(x), rtol=0, atol=0)
        torch.testing.assert_close(staged(x), b(a(x)), rtol=0, atol=0)
    r = staged.report()
    assert r["captures"] >= 2 and r["graphs_off_reason"] is None, (r, _log(caplog))


def test_a_method_released_while_asleep_captures_again_into_a_new_pool(torch_cuda, caplog):
    torch = torch_cuda
    model = _mlp(torch, width=1024)
    mgr = encore.Manager(flags="")
    m, f, x = _captured(torch, mgr, "released_asleep", model, rows=512)
    mgr.sleep()
    m.release()  # its pool goes with its graphs; what PyTorch keeps of it is mapped back
    mgr.wake()
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(m(x), f(x), rtol=0, atol=0)
    r = m.report()
    assert r["captures"] == 2 and r["replays"] >= 2 and r["graphs_off_reason"] is None, (r, _log(caplog))
