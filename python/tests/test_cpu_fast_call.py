# SPDX-License-Identifier: Apache-2.0
"""The C++ fast path of a replay (encore._encore.FastCall) with stand-ins for
PyTorch's tensors: what it checks before it runs (each a miss, so the
general path decides), what it hands the method, and that the method's lock
and call state are left as they were whatever happens. Without a GPU every
run it makes fails, which reaches the same after_body a recapture or a
refusal reaches; with one, the tests that would run (on made-up addresses)
skip, and the GPU tests cover the path."""

import threading
import types

import pytest

import encore
from encore import _encore, _torch
from encore._body import CallState, OutSpec
from encore._method import _MISS, FastPath
from encore._tree import TENSOR, unflatten


class DType:
    def __init__(self, name):
        self.name = name


DTYPES = [DType(n) for n in ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8",
                             "bool")]
F32, I64 = DTYPES[0], DTYPES[4]


class Tensor:
    next_ptr = [0x100000]

    def __init__(self, shape, dtype=F32, device=0, requires_grad=False):
        self.shape, self.dtype, self.device, self.requires_grad = tuple(shape), dtype, device, requires_grad
        Tensor.next_ptr[0] += 0x1000
        self.ptr = Tensor.next_ptr[0]

    def data_ptr(self):
        return self.ptr

    def stride(self):
        out, n = [], 1
        for d in reversed(self.shape):
            out.append(n)
            n *= max(d, 1)
        return tuple(reversed(out))

    def get_device(self):
        return self.device


class FakeTorch:
    """What FastCall reads of torch: Tensor, is_grad_enabled, empty and the
    current raw stream."""

    def __init__(self):
        self.Tensor = Tensor
        self.grad = False
        self.made = []
        self._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0)

    def is_grad_enabled(self):
        return self.grad

    def empty(self, shape, dtype=None, device=None):
        t = Tensor(shape, dtype, device)
        self.made.append((shape, dtype, device))
        return t


class FakeMethod:
    """What after_body uses of encore.Method: its C++ method (whose call
    state the fast path reads) and its results."""

    def __init__(self, cm):
        self._cm = cm

    def _results(self, state):
        return ("results", state)


def _gpu_present():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


runs_without_gpu = pytest.mark.skipif(_gpu_present(), reason="the run would reach a GPU with made-up addresses")


@pytest.fixture
def fake():
    _encore.set_torch_dtypes(DTYPES)
    yield
    real = _torch._state.get("torch")  # a GPU test in this process made the real dtypes current
    if real is not None:
        _encore.set_torch_dtypes([real.float32, real.float16, real.bfloat16, real.float64, real.int64, real.int32,
                                  real.int8, real.uint8, real.bool])


def make(reuse=False, out=(((4,), F32),), single=True):
    torch = FakeTorch()
    manager = _encore.Manager.create(";", 0, None, 0)
    cm = manager.register_method("fast_call_test", lambda call: None, [], None)
    m = FakeMethod(cm)
    spec = OutSpec((TENSOR,) if single else (("tuple", len(out)),) + (TENSOR,) * len(out), [], list(out))
    state = CallState((), {}, (), (("tuple", 2), TENSOR, TENSOR), None, (), spec)
    # A constant: a stand-in tensor held in a module-like dict.
    constant = Tensor((8,))
    holder = {"weight": constant}
    watch = _encore.ConstantWatch(None)
    watch.set([holder], [constant])
    moved = types.SimpleNamespace(constant=constant, holder=holder, watch=watch)
    hooks = (_MISS, torch, FastPath.after_body, unflatten, watch)
    args = (Tensor((4,)), Tensor((2, 3), I64))
    m._cm.fast = _encore.FastCall(cm, args, spec, state, reuse, single, hooks)
    return m, torch, spec, state, moved, manager


def args_like():
    return (Tensor((4,)), Tensor((2, 3), I64))


def assert_left_as_it_was(m):
    assert m._cm.state is None
    got = []
    t = threading.Thread(target=lambda: got.append(m._cm.lock.acquire(blocking=False)))
    t.start()
    t.join()
    assert got == [True], "the method's lock is still held"


@pytest.mark.parametrize("change", ["count", "type", "shape", "dtype", "device", "grad_input", "grad_result",
                                    "grad_constant", "constant_moved", "constant_replaced", "replaced",
                                    "in_flight"])
def test_a_call_unlike_the_replay_is_a_miss(fake, change):
    m, torch, _spec, _state, moved, _mgr = make()
    fast = m._cm.fast
    a = list(args_like())
    if change == "count":
        a.append(Tensor((1,)))
    elif change == "type":
        a[0] = 3.0
    elif change == "shape":
        a[1] = Tensor((3, 2), I64)
    elif change == "dtype":
        a[0] = Tensor((4,), DTYPES[1])
    elif change == "device":
        a[1] = Tensor((2, 3), I64, device=1)
    elif change.startswith("grad"):
        torch.grad = True
        if change == "grad_input":
            a[0] = Tensor((4,), requires_grad=True)
        elif change == "grad_result":
            m._cm.result_grad = True
        else:
            moved.constant.requires_grad = True
            moved.watch.set([moved.holder], [moved.constant])
    elif change == "constant_moved":  # its .data set: the same object, another address
        moved.constant.ptr += 0x10
    elif change == "constant_replaced":
        moved.holder["weight"] = Tensor((8,))
    elif change == "replaced":
        m._cm.fast = None
    else:
        m._cm.state = object()
    assert fast.call(m, tuple(a)) is _MISS
    assert torch.made == []  # nothing was made, nothing ran
    if change != "in_flight":
        assert_left_as_it_was(m)


@runs_without_gpu
def test_grad_mode_alone_is_no_miss(fake):
    m, torch, _spec, _state, _moved, _mgr = make()
    torch.grad = True
    with pytest.raises(encore.Error):  # it ran: no GPU here, so the run failed
        m._cm.fast.call(m, args_like())


@runs_without_gpu
def test_a_matching_call_hands_the_method_its_tensors_and_new_outputs(fake):
    m, torch, _spec, state, _moved, _mgr = make()
    fast = m._cm.fast
    a = args_like()
    with pytest.raises(encore.Error) as info:
        fast.call(m, a)
    # The run failed (no GPU here) and after_body raised it, as the general path would.
    assert info.value.code in ("UNAVAILABLE", "INTERNAL", "FAILED_PRECONDITION")
    assert torch.made == [((4,), F32, 0)]
    assert state.args is a and state.tensors is a
    assert isinstance(state.outputs, list) and state.outputs[0].shape == (4,)
    assert state.exc is None and state.ran_kind is None
    assert m._cm.fast is None  # after_body dropped the fast path
    assert_left_as_it_was(m)


@runs_without_gpu
def test_after_body_results_are_returned(fake, monkeypatch):
    m, _torch_, _spec, state, _moved, _mgr = make(out=(((4,), F32), ((1,), I64)), single=False)
    seen = []

    def after_body(method, st, err):
        seen.append((method, st, err))
        return "after"

    fast = _encore.FastCall(m._cm, args_like(), _spec, state, False, False,
                            (_MISS, _torch_, after_body, unflatten, None))
    m._cm.fast = fast
    assert fast.call(m, args_like()) == "after"
    method, st, err = seen[0]
    assert method is m and st is state and isinstance(err, encore.Error) and err.code != "OK"
    assert [o.shape for o in state.outputs] == [(4,), (1,)]
    # The second call reads only the new outputs' addresses: still two, new ones.
    first = [o.data_ptr() for o in state.outputs]
    assert fast.call(m, args_like()) == "after"
    assert [o.data_ptr() for o in state.outputs] != first
    assert_left_as_it_was(m)


@runs_without_gpu
def test_outputs_reuse_hands_the_kept_outputs(fake):
    m, torch, spec, state, _moved, _mgr = make(reuse=True)
    fast = m._cm.fast
    with pytest.raises(encore.Error):
        fast.call(m, args_like())
    kept = spec.kept
    assert kept is not None and state.outputs is kept
    m._cm.fast = fast
    with pytest.raises(encore.Error):
        fast.call(m, args_like())
    assert state.outputs is kept and len(torch.made) == 1
    assert_left_as_it_was(m)


@runs_without_gpu
def test_an_exception_of_after_body_leaves_the_method_usable(fake):
    m, torch, spec, state, _moved, _mgr = make()

    def after_body(method, st, err):
        raise KeyError("from after_body")

    fast = _encore.FastCall(m._cm, args_like(), spec, state, False, True,
                            (_MISS, torch, after_body, unflatten, None))
    m._cm.fast = fast
    with pytest.raises(KeyError, match="from after_body"):
        fast.call(m, args_like())
    assert_left_as_it_was(m)
