# SPDX-License-Identifier: Apache-2.0
"""Serving changing shapes from Python: on_new_shape=pad with listed and
learned buckets, results of b rows, batches above the buckets, and
precapture making the first call a replay. Each test checks values and
that the path it names ran."""

import pytest

import encore


def _rowwise(torch):
    """A row-independent function of a batch (as an encoder is), and its
    eager twin."""
    w = torch.randn(32, 16, device="cuda")
    bias = torch.randn(16, device="cuda")

    def f(x):
        return torch.relu(x @ w + bias), x.sum(dim=1, keepdim=True)

    return f, {"w": w, "bias": bias}


def _check(torch, got, want):
    assert len(got) == len(want)
    for g, e in zip(got, want):
        assert g.shape == e.shape, (g.shape, e.shape)
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def test_listed_buckets_serve_every_batch_with_b_rows(torch_cuda, manager):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    m = manager.method(f, name="pad_listed", constants=consts, flags="on_new_shape=pad,buckets=1|2|4|8,warmup=1")
    kept = []
    for rep in range(3):
        for b in range(1, 9):
            x = torch.randn(b, 32, device="cuda")
            got = m(x)
            _check(torch, got, f(x))
            kept.append((x, got))
    # Results are new tensors that later calls do not overwrite.
    for x, got in kept:
        _check(torch, got, f(x))
    ptrs = [t.data_ptr() for _, got in kept for t in got]
    assert len(set(ptrs)) == len(ptrs)
    r = m.report()
    assert r["buckets"] == [1, 2, 4, 8], r
    assert r["replays"] >= 16 and r["captures"] == 4, r
    assert r["real_rows"] > 0 and r["padded_rows"] > 0, r
    assert r["eager_calls"] <= 2, r  # the results learned once, a warmup


def test_a_batch_above_the_largest_bucket_runs_eagerly(torch_cuda, manager):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    m = manager.method(f, name="pad_above", constants=consts, flags="on_new_shape=pad,buckets=2|4,warmup=1")
    for b in (1, 2, 3, 4, 4):
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f(x))
    x = torch.randn(9, 32, device="cuda")
    _check(torch, m(x), f(x))
    r = m.report()
    assert r["eager_by_reason"].get("above_buckets") == 1, r


def test_learned_buckets(torch_cuda, manager):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    m = manager.method(f, name="pad_learned", constants=consts, flags="on_new_shape=pad,max_graphs=3,warmup=1")
    gen = torch.Generator().manual_seed(0)
    for _ in range(80):
        b = int(torch.randint(1, 17, (1,), generator=gen))
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f(x))
    r = m.report()
    assert 1 <= len(r["buckets"]) <= 3 and r["replays"] > 0, r


def test_outputs_reuse_under_pad_are_views_of_b_rows(torch_cuda, manager):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    m = manager.method(f, name="pad_reuse", constants=consts,
                       flags="on_new_shape=pad,buckets=4|8,warmup=1,outputs=reuse")
    # Batch 3 runs eagerly to learn the results, 8 is the warmup, 5 and 2
    # capture buckets 8 and 4 (a capture's launch is no replay), 7, 6 and 1
    # replay them.
    got = {}
    for b in (3, 8, 5, 2, 7, 6, 1):
        x = torch.randn(b, 32, device="cuda")
        got[b] = m(x)
        _check(torch, got[b], f(x))
        assert [t.shape[0] for t in got[b]] == [b, b]
    r = m.report()
    assert r["captures"] == 2 and r["replays"] == 3 and r["buckets"] == [4, 8], r
    # The replays' results are views of the same kept rows, whatever the
    # bucket: each later call wrote over the earlier ones.
    for i in range(2):
        assert got[7][i].data_ptr() == got[6][i].data_ptr() == got[1][i].data_ptr()


def test_other_non_tensor_arguments_run_eagerly_under_pad(torch_cuda, manager):
    torch = torch_cuda

    def f(x, scale):
        return x * scale

    m = manager.method(f, name="pad_args", flags="on_new_shape=pad,buckets=4,warmup=1")
    x = torch.randn(3, 8, device="cuda")
    # The results learned (an eager call), the warmup, the capture, a replay.
    for _ in range(4):
        torch.testing.assert_close(m(x, 2.0), x * 2.0)
    assert m.report()["replays"] == 1
    torch.testing.assert_close(m(x, 3.0), x * 3.0)
    torch.testing.assert_close(m(x, 2.0), x * 2.0)  # the graph is kept: its own arguments replay it
    r = m.report()
    assert r["eager_by_reason"].get("new_shape") == 1 and r["replays"] == 2 and r["captures"] == 1, r


def test_a_result_that_is_not_rows_of_the_batch_runs_eagerly(torch_cuda, manager, caplog):
    torch = torch_cuda

    def f(x):
        return x.sum()

    m = manager.method(f, name="pad_scalar", flags="on_new_shape=pad,buckets=4,warmup=1")
    with caplog.at_level("INFO", logger="encore"):
        for b in (1, 2, 3, 4):
            x = torch.randn(b, 8, device="cuda")
            torch.testing.assert_close(m(x), x.sum())
    r = m.report()
    assert r["eager_by_reason"] == {"results_unknown": 1, "not_rows": 3} and r["captures"] == 0, r
    assert any("every result of a padded method is rows of the batch" in rec.getMessage() for rec in caplog.records)


def test_precapture_of_listed_buckets_makes_the_first_call_a_replay(torch_cuda, manager):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    m = manager.method(f, name="pad_pre", constants=consts, flags="on_new_shape=pad,buckets=1|2|4|8")
    m.precapture(torch.randn(8, 32, device="cuda"))
    r = m.report()
    assert r["precaptures"] == 4 and r["calls"] == 0 and r["replays"] == 0, r
    for b in (3, 1, 8, 6):
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f(x))
    r = m.report()
    assert r["replays"] == 4 and r["calls"] == 4 and r["eager_calls"] == 0 and r["captures"] == 4, r


def test_precapture_of_one_signature(torch_cuda, manager):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    m = manager.method(f, name="pre_fixed", constants=consts)
    x = torch.randn(5, 32, device="cuda")
    m.precapture(x)
    _check(torch, m(x), f(x))
    y = torch.randn(5, 32, device="cuda")
    _check(torch, m(y), f(y))
    r = m.report()
    assert r["replays"] == 2 and r["eager_calls"] == 0 and r["precaptures"] == 1, r


def test_precapture_of_a_host_tensor_is_refused(torch_cuda, manager):
    torch = torch_cuda
    m = manager.method(lambda x: x + 1, name="pre_host")
    with pytest.raises(encore.InvalidArgumentError, match="host_input"):
        m.precapture(torch.ones(2))


def test_background_captures_under_a_stream_of_new_shapes(torch_cuda):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    mgr = encore.Manager(flags="")
    m = mgr.method(f, name="bg_shapes", constants=consts, flags="capture=background,on_new_shape=recapture,"
                                                                 "max_graphs=8,warmup=1")
    sizes = [1, 2, 3, 4, 5, 6, 7, 8] * 4
    for b in sizes:
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f(x))  # never waits for a capture; always right
    mgr.synchronize_captures()
    for b in sizes[:8]:
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f(x))
    r = m.report()
    assert r["background_captures"] >= 1 and r["replays"] >= 1, r
    assert r["eager_by_reason"].get("capturing", 0) >= 1, r


def test_background_buckets_first_call_is_eager_then_replays(torch_cuda):
    torch = torch_cuda
    f, consts = _rowwise(torch)
    mgr = encore.Manager(flags="")
    m = mgr.method(f, name="bg_pad", constants=consts, flags="capture=background,on_new_shape=pad,buckets=4|8,"
                                                              "warmup=1")
    for b in (3, 7, 2, 8):
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f(x))
    mgr.synchronize_captures()
    for b in (3, 7, 2, 8):
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f(x))
    r = m.report()
    assert r["background_captures"] == 2 and r["replays"] >= 2, r


def test_a_background_capture_that_fails_turns_graphs_off_and_calls_stay_right(torch_cuda):
    torch = torch_cuda
    mgr = encore.Manager(flags="")

    def f(x):
        if x.sum().item() > 1e30:  # .item() refuses inside a capture
            return x
        return x * 2

    m = mgr.method(f, name="bg_fails", flags="capture=background,warmup=1")
    x = torch.randn(4, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(m(x), x * 2)
    mgr.synchronize_captures()
    for _ in range(3):
        torch.testing.assert_close(m(x), x * 2)
    r = m.report()
    assert r["phase"] == "eager" and r["capture_failures"] == 1, r


def test_two_threads_call_while_a_capture_is_pending(torch_cuda):
    import threading
    torch = torch_cuda
    f, consts = _rowwise(torch)
    mgr = encore.Manager(flags="")
    m = mgr.method(f, name="bg_threads", constants=consts, flags="capture=background,warmup=1")
    errors = []

    def worker(seed):
        try:
            g = torch.Generator(device="cuda").manual_seed(seed)
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for _ in range(20):
                    x = torch.randn(6, 32, device="cuda", generator=g)
                    _check(torch, m(x), f(x))
            s.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mgr.synchronize_captures()
    assert not errors, errors
    assert m.report()["background_captures"] == 1


def test_a_manager_dropped_with_captures_pending(torch_cuda):
    import gc
    torch = torch_cuda
    f, consts = _rowwise(torch)
    mgr = encore.Manager(flags="")
    m = mgr.method(f, name="bg_dropped", constants=consts, flags="capture=background,warmup=1")
    for _ in range(2):
        x = torch.randn(5, 32, device="cuda")
        _check(torch, m(x), f(x))
    del m, mgr
    gc.collect()
    torch.cuda.synchronize()
    x = torch.randn(5, 32, device="cuda")
    _check(torch, f(x), f(x))  # the process and its context go on
