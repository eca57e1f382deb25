# SPDX-License-Identifier: Apache-2.0
"""capture=background beside the rest of an application: what other threads
may do while the worker records (Note [What a background capture may
coincide with], graph/runtime/background.cc), a device-wide sync that CUDA
refuses meanwhile, a manager dropped with captures pending, and a sleep
with a ready capture."""

import gc
import threading
import time

import pytest

import encore


def _rowwise(torch):
    w = torch.randn(32, 16, device="cuda")
    bias = torch.randn(16, device="cuda")
    return w, bias


class _Held:
    """A body whose capture (on the worker) holds itself open until
    released: `begun` is set once the capture is open."""

    def __init__(self, torch, hold_first_only=True):
        self.torch = torch
        self.w, self.bias = _rowwise(torch)
        self.begun = threading.Event()
        self.release = threading.Event()
        self.captures = 0
        self.hold_first_only = hold_first_only

    def __call__(self, x):
        torch = self.torch
        if torch.cuda.is_current_stream_capturing():
            self.captures += 1
            if self.captures == 1 or not self.hold_first_only:
                self.begun.set()
                self.release.wait(10)  # releases the GIL: the caller's thread goes on
        return torch.relu(x @ self.w + self.bias)

    def eager(self, x):
        return self.torch.relu(x @ self.w + self.bias)


def _check(torch, got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def _method(mgr, f, name, flags="capture=background,warmup=1"):
    return mgr.method(f, name=name, constants={"w": f.w, "bias": f.bias}, flags=flags)


def _launched_and_replayed(torch, mgr, m, f, x):
    """After the captures pending are done: the ready graph's first launch
    and a replay, right; the report, with graphs on and one background
    capture launched."""
    mgr.synchronize_captures()
    _check(torch, m(x), f.eager(x))  # the first launch
    _check(torch, m(x), f.eager(x))  # a replay
    r = m.report()
    assert r["graphs_off_reason"] is None, r
    assert r["background_captures"] == 1 and r["captures"] == 1 and r["replays"] >= 1, r
    return r


def _calls_until_queued(torch, m, f, b=6):
    x = torch.randn(b, 32, device="cuda")
    _check(torch, m(x), f.eager(x))  # the warmup
    _check(torch, m(x), f.eager(x))  # queues the capture
    return x


def test_other_threads_work_beside_an_open_background_capture(torch_cuda):
    torch = torch_cuda
    f = _Held(torch)
    mgr = encore.Manager(flags="")
    m = _method(mgr, f, "bg_beside")
    x = _calls_until_queued(torch, m, f)
    assert f.begun.wait(10), "the worker never began the capture"
    errors = []
    try:
        # Work on the legacy stream, new allocations and frees, copies to
        # the host, stream and event syncs, on this thread and another.
        y = torch.randn(1000, device="cuda").sum()
        big = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        del big
        torch.cuda.empty_cache()
        assert torch.ones(10, device="cuda").cpu().sum().item() == 10
        torch.cuda.current_stream().synchronize()
        e = torch.cuda.Event()
        e.record()
        e.synchronize()

        def other():
            try:
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    for _ in range(10):
                        (torch.ones(64, 64, device="cuda") @ torch.ones(64, 64, device="cuda")).sum()
                s.synchronize()
            except Exception as ex:  # noqa: BLE001 - reported below
                errors.append(ex)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        # A thread-local capture of this thread's own, beside the worker's.
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        a = torch.ones(64, 64, device="cuda")
        with torch.cuda.stream(s):
            (a @ a).sum()
        s.synchronize()
        with torch.cuda.stream(s):
            g.capture_begin(capture_error_mode="thread_local")
            b = a @ a
            g.capture_end()
        g.replay()
        s.synchronize()
        assert b[0, 0].item() == 64
        # Calls of the method meanwhile: eager, right.
        for _ in range(3):
            _check(torch, m(x), f.eager(x))
        y.item()
    finally:
        f.release.set()
    assert not errors, errors
    r = _launched_and_replayed(torch, mgr, m, f, x)
    assert r["capture_failures"] == 0, r
    assert f.captures == 1


def test_a_device_sync_beside_a_background_capture_is_captured_again(torch_cuda):
    torch = torch_cuda
    f = _Held(torch)
    mgr = encore.Manager(flags="")
    m = _method(mgr, f, "bg_device_sync")
    x = _calls_until_queued(torch, m, f)
    assert f.begun.wait(10)
    try:
        with pytest.raises(Exception, match="capturing"):  # CUDA's refusal, in this thread
            torch.cuda.synchronize()
    finally:
        f.release.set()
    mgr.synchronize_captures()
    r = m.report()
    assert r["graphs_off_reason"] is None, r
    assert r["capture_failures"] == 0, r
    _check(torch, m(x), f.eager(x))  # queues the capture again
    r = _launched_and_replayed(torch, mgr, m, f, x)
    assert f.captures == 2
    assert set(r["eager_by_reason"]) <= {"capturing"}, r
    torch.cuda.synchronize()


def test_a_manager_dropped_with_captures_pending_runs_no_body_after(torch_cuda):
    torch = torch_cuda
    f = _Held(torch)
    mgr = encore.Manager(flags="")
    m = _method(mgr, f, "bg_dropped_after", "capture=background,warmup=1,on_new_shape=recapture,max_graphs=8")
    for b in (2, 2, 3, 4, 5):
        x = torch.randn(b, 32, device="cuda")
        _check(torch, m(x), f.eager(x))
    assert f.begun.wait(10)
    threading.Timer(0.05, f.release.set).start()
    del m, mgr
    gc.collect()
    seen = f.captures
    assert seen == 1, seen  # the one being recorded; the queued ones were dropped
    time.sleep(0.2)
    assert f.captures == seen  # and none ran later
    torch.cuda.synchronize()  # no capture is left open


def test_a_sleep_keeps_a_ready_background_capture(torch_cuda):
    torch = torch_cuda
    f = _Held(torch)
    f.release.set()
    mgr = encore.Manager(flags="")
    m = _method(mgr, f, "bg_sleep_ready")
    x = _calls_until_queued(torch, m, f)
    mgr.synchronize_captures()
    mgr.sleep()
    mgr.wake()
    capturing = m.report()["eager_by_reason"].get("capturing", 0)
    r = _launched_and_replayed(torch, mgr, m, f, x)  # the ready graph's first launch: no capture
    assert r["eager_by_reason"].get("capturing", 0) == capturing, r
    assert f.captures == 1
