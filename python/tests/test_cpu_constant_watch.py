# SPDX-License-Identifier: Apache-2.0
"""encore._encore.ConstantWatch with stand-ins for PyTorch's tensors and a
module's dicts: every way a constant moves is seen at the next check, and
nothing else is. No GPU and no PyTorch needed."""

import sys

import pytest

from encore import _encore


class Tensor:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


class Broken:
    def data_ptr(self):
        raise RuntimeError("no storage")


def watched():
    w, b = Tensor(0x1000), Tensor(0x2000)
    params, buffers, modules = {"weight": w}, {"running_mean": b}, {}
    watch = _encore.ConstantWatch(None)
    watch.set([params, buffers, modules], [w, b])
    return watch, w, params, buffers, modules


def test_nothing_moved_is_unchanged_call_after_call():
    watch, *_ = watched()
    assert watch.num_dicts == 3 and watch.num_tensors == 2
    for _ in range(3):
        assert watch.unchanged()


@pytest.mark.parametrize("how", ["data_set", "replaced", "added", "removed", "submodule"])
def test_every_way_a_constant_moves_is_seen(how):
    watch, w, params, buffers, modules = watched()
    if how == "data_set":  # .data = ..., module.cuda(): the same object, another address
        w.ptr = 0x3000
    elif how == "replaced":  # module.weight = Parameter(...), load_state_dict(assign=True)
        params["weight"] = Tensor(0x1000)
    elif how == "added":
        buffers["num_batches_tracked"] = Tensor(0x4000)
    elif how == "removed":
        del buffers["running_mean"]
    else:
        modules["child"] = object()
    assert not watch.unchanged()


def test_set_again_watches_what_is_there_now():
    watch, w, params, buffers, modules = watched()
    w.ptr = 0x3000
    assert not watch.unchanged()
    watch.set([params, buffers, modules], [w, buffers["running_mean"]])
    assert watch.unchanged()


def test_a_tensor_whose_pointer_cannot_be_read_is_a_change_not_an_error():
    ok = Tensor(0x1000)
    broken_later = Tensor(0x2000)
    watch = _encore.ConstantWatch(None)
    watch.set([], [ok, broken_later])
    broken_later.data_ptr = Broken().data_ptr
    assert not watch.unchanged()
    assert sys.exc_info() == (None, None, None)


def test_set_rejects_a_non_dict_and_an_unreadable_tensor():
    watch = _encore.ConstantWatch(None)
    with pytest.raises(ValueError, match="non-dict"):
        watch.set([[1, 2]], [])
    with pytest.raises(RuntimeError, match="no storage"):
        watch.set([], [Broken()])
    watch.set([], [Tensor(1)])
    assert watch.unchanged()
