# SPDX-License-Identifier: Apache-2.0
"""How a Python method holds its capture pool (python/encore/_pool.py, Note
[A pool whose lifetime is the method's]), against a model of PyTorch's
private-pool bookkeeping (c10/cuda/CUDACachingAllocator.cpp:
createOrIncrefPool, beginAllocateToPool, releasePool; MemPool's constructor
and destructor), so no GPU and no PyTorch is needed. The model asserts where
PyTorch does: routing to a pool id whose users all went, which the allocator
still knows."""

import contextlib
import gc
import types

import pytest

from encore import _body, _pool


class FakeAllocator:
    """PrivatePool::use_count per pool id, as PyTorch's allocator keeps it."""

    def __init__(self):
        self.use_count = {}   # pool id -> users
        self.routed = []      # (device, pool id) routed now
        self.next_id = 1

    def new_id(self):
        self.next_id += 1
        return (0, self.next_id)

    def create_or_incref(self, pool):
        if pool in self.use_count:
            # TORCH_INTERNAL_ASSERT(it->second->use_count > 0)
            assert self.use_count[pool] > 0, "it->second->use_count > 0 INTERNAL ASSERT FAILED"
            self.use_count[pool] += 1
        else:
            self.use_count[pool] = 1

    def release(self, pool):
        self.use_count[pool] -= 1
        assert self.use_count[pool] >= 0

    def empty_cache(self, pool):
        if self.use_count.get(pool) == 0:
            del self.use_count[pool]  # the allocator forgets the pool once it freed its blocks


def fake_torch():
    a = FakeAllocator()

    class MemPool:
        def __init__(self, allocator=None):
            self.id = a.new_id()
            self.allocator = allocator
            a.create_or_incref(self.id)

        def __del__(self):
            a.release(self.id)
            a.empty_cache(self.id)

    def begin(device, pool):
        a.create_or_incref(pool)
        a.routed.append((device, pool))

    def end(device, pool):
        a.routed.remove((device, pool))

    c = types.SimpleNamespace(_cuda_beginAllocateCurrentThreadToPool=begin, _cuda_endAllocateToPool=end,
                              _cuda_releasePool=lambda device, pool: a.release(pool))
    cuda = types.SimpleNamespace(MemPool=MemPool, device=lambda d: contextlib.nullcontext(),
                                 graph_pool_handle=a.new_id)
    return types.SimpleNamespace(_C=c, cuda=cuda), a


def test_the_model_asserts_as_pytorch_did_for_a_bare_handle_whose_graphs_all_went():
    torch, a = fake_torch()
    pool = torch.cuda.graph_pool_handle()
    torch._C._cuda_beginAllocateCurrentThreadToPool(0, pool)  # the first capture makes the pool
    torch._C._cuda_endAllocateToPool(0, pool)
    torch._C._cuda_releasePool(0, pool)  # its graph dropped (a weight sync that could not rebind)
    with pytest.raises(AssertionError, match="use_count > 0"):
        torch._C._cuda_beginAllocateCurrentThreadToPool(0, pool)  # the next capture


def test_a_capture_after_every_graph_of_the_method_went_routes_to_a_live_pool():
    torch, a = fake_torch()
    pool = _pool.MethodPool(torch, 0)
    graphs = []
    for _ in range(3):
        with pool.routed(graphs.append):
            assert a.routed == [(0, pool.id)] and a.use_count[pool.id] == 2
        assert a.routed == []
        graphs.clear()  # encore drops the graph: its lease releases its share
        gc.collect()
        assert a.use_count[pool.id] == 1  # the method's own share: never 0 while it can be routed to


def test_graphs_keep_the_pool_past_the_method_and_it_goes_with_the_last():
    torch, a = fake_torch()
    pool = _pool.MethodPool(torch, 0)
    pool_id = pool.id
    first, second = [], []
    with pool.routed(first.append):
        pass
    with pool.routed(second.append):
        pass
    del pool  # the method released (Body.reset) or gone: its graphs still hold the pool
    gc.collect()
    assert a.use_count[pool_id] == 3
    first.clear()
    gc.collect()
    assert a.use_count[pool_id] == 2
    second.clear()  # the last graph: its release, then the MemPool's own, then its cache emptied
    gc.collect()
    assert pool_id not in a.use_count


def test_a_routing_whose_lease_cannot_be_kept_is_undone():
    torch, a = fake_torch()
    pool = _pool.MethodPool(torch, 0)

    def refuse(lease):
        raise RuntimeError("no graph to keep it with")

    with pytest.raises(RuntimeError):
        with pool.routed(refuse):
            pass
    gc.collect()
    assert a.routed == [] and a.use_count[pool.id] == 1


def test_the_body_keeps_one_pool_per_device_until_its_method_is_released():
    torch, a = fake_torch()
    body = _body.Body(types.SimpleNamespace(_torch=torch), fn=None)
    graphs = []
    call = types.SimpleNamespace(keep_with_graph=graphs.append)
    with body._routed_to_pool(call, 0):
        pass
    first = body._pools[0].id
    graphs.clear()  # C++ dropped the graphs (a rebind that captures again, a budget drop)
    gc.collect()
    with body._routed_to_pool(call, 0):  # the same pool, still live
        pass
    assert body._pools[0].id == first
    with body._routed_to_pool(call, 1):
        pass
    assert body._pools[1].id != first
    body.reset()  # Method.release(): the pools go with their last graphs; later captures get new ones
    graphs.clear()
    gc.collect()
    assert first not in a.use_count
    with body._routed_to_pool(call, 0):
        pass
    assert body._pools[0].id != first

