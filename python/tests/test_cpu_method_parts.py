# SPDX-License-Identifier: Apache-2.0
"""The Python layer's own decisions, on the CPU with PyTorch's CPU tensors
(skipped where PyTorch is missing): signatures under pad, outputs of b
rows, results that are not rows, the snapshot a background capture reads,
and whether moved constants are rebound or released. Nothing here reaches
a GPU; the GPU tests run the same paths end to end."""

import types

import pytest

torch = pytest.importorskip("torch")

import encore  # noqa: E402
from encore import _body  # noqa: E402


def _method(flags="", constants=None, fn=None):
    mgr = encore.Manager(flags="")
    return mgr.method(fn or (lambda x: x * 2), name="parts", flags=flags, constants=constants)


def test_a_padded_signature_leaves_the_batch_out():
    m = _method("on_new_shape=pad,buckets=4|8")
    a, b = torch.zeros(3, 5), torch.zeros(7, 5)
    assert m._signature((), [a]) == m._signature((), [b])
    assert m._signature((), [a]) != m._signature((), [torch.zeros(3, 6)])
    assert m._batch([a]) == 3
    plain = _method()
    assert plain._signature((), [a]) != plain._signature((), [b]) and plain._batch([a]) is None


def test_outputs_of_b_rows_and_reused_views():
    spec = _body.OutSpec((), [], [((_body.BATCH, 4), torch.float32), ((2,), torch.int64)])
    fake = types.SimpleNamespace(empty=lambda s, dtype=None, device=None: torch.empty(s, dtype=dtype))
    outs = spec.new_outputs(fake, None, False, 3)
    assert [tuple(o.shape) for o in outs] == [(3, 4), (2,)]
    kept = spec.new_outputs(fake, None, True, 6)
    assert [tuple(o.shape) for o in kept] == [(6, 4), (2,)]
    smaller = spec.new_outputs(fake, None, True, 2)
    assert smaller[0].data_ptr() == kept[0].data_ptr() and tuple(smaller[0].shape) == (2, 4)
    larger = spec.new_outputs(fake, None, True, 9)
    assert tuple(larger[0].shape) == (9, 4)


def test_results_learned_under_pad_mark_the_batch_and_name_what_is_not_rows():
    m = _method("on_new_shape=pad,buckets=4")
    x = torch.zeros(3, 5)
    state = _body.CallState((x,), {}, [x], (), m._signature((), [x]), (), None)
    m._body.learn(state, [torch.zeros(3, 2), torch.zeros(())], (), [])
    spec = m._body.specs[state.sig]
    assert spec.out[0] == ((_body.BATCH, 2), torch.float32)
    assert "result 1 has no rows in dim 0 for a batch of 3" in spec.not_rows


def test_a_background_capture_reads_a_snapshot_that_holds_no_tensor():
    x, out = torch.ones(2, 3), torch.empty(2, 3)
    state = _body.CallState(((x, 2.5),), {"flag": True}, [x], ("n",), "sig", [out], None)
    snap = _body.snapshot(state, torch)
    assert snap.arg_leaves == [2.5, True]
    assert all(not isinstance(t, torch.Tensor) for t in snap.tensors + snap.outputs)
    assert snap.tensors[0].shape == x.shape and snap.tensors[0].dtype == x.dtype
    assert snap.tensors[0].data_ptr() == -1 and snap.args is None


def test_moved_constants_of_the_same_layout_are_rebound_else_released():
    lin = torch.nn.Linear(4, 4)
    m = _method(constants=lin, fn=lambda x: lin(x))
    calls = []
    m._cm = types.SimpleNamespace(rebind_constants=lambda c: calls.append(("rebind", [e[0] for e in c])),
                                  release_constants=lambda c: calls.append(("release", len(c))),
                                  result_grad=False, fast=None)
    assert m._consts.watch.unchanged()
    lin.weight.data = torch.randn(4, 4)
    assert not m._consts.watch.unchanged()
    m._constants_moved()
    assert calls == [("rebind", ["weight"])] and m._consts.watch.unchanged()
    lin.bias = torch.nn.Parameter(torch.randn(2))  # another size
    m._constants_moved()
    assert calls[-1] == ("release", 2)


def test_a_call_that_finds_the_pools_asleep_wakes_them_and_a_lost_pool_drops_the_graphs():
    m = _method()
    events = []
    m._manager._cxx = types.SimpleNamespace(wake_pools=lambda: events.append("wake"),
                                            settle_pools=lambda: events.append("settle"))
    m._release_locked = lambda: events.append("release")
    m._body.pools = lambda: [types.SimpleNamespace(lost=False, bytes=0)]
    m._tend_pools()
    assert events == ["wake", "settle"]
    events.clear()
    m._body.pools = lambda: [types.SimpleNamespace(lost=True, bytes=0)]  # its memory could not come back
    m._tend_pools()
    assert events == ["wake", "release", "settle"]


def _reaches(start, targets, limit=20000):
    """Whether any of `targets` is reachable from `start` through strong
    references (weak references are not followed)."""
    import gc
    seen, todo = set(), [start]
    ids = {id(t) for t in targets}
    while todo and len(seen) < limit:
        o = todo.pop()
        if id(o) in seen or isinstance(o, type) or type(o).__name__ == "module":
            continue
        seen.add(id(o))
        if id(o) in ids:
            return True
        todo.extend(gc.get_referents(o))
    return False


def test_the_body_a_background_capture_runs_holds_neither_method_nor_manager():
    # The worker thread's frame holds the body while it records: had the
    # body a path to the Method or the Manager, an application dropping its
    # manager then would keep both alive, and every queued capture would
    # still run after it (test_gpu_background.py sees that on a GPU).
    import gc
    import weakref
    mgr = encore.Manager(flags="")
    m = mgr.method(lambda x: x * 2, name="held", flags="capture=background")
    body = m._body
    assert not _reaches(body, [m, mgr])
    gone = weakref.ref(mgr)
    del m, mgr
    gc.collect()
    assert gone() is None  # the body alone keeps neither
    del body
