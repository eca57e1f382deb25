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
    class CUDAPluggableAllocator:
        def __init__(self, path, alloc_fn, free_fn):
            a.pluggable = (path, alloc_fn, free_fn)

        def allocator(self):
            return "encore's allocator"

    cuda = types.SimpleNamespace(MemPool=MemPool, device=lambda d: contextlib.nullcontext(),
                                 graph_pool_handle=a.new_id,
                                 memory=types.SimpleNamespace(CUDAPluggableAllocator=CUDAPluggableAllocator))
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
    body = _body.Body(torch, fn=None)
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


class FakeMemory:
    """What python/src/py_torch_pool.h's TorchPool does, as the pool sees it."""

    def __init__(self, events, device):
        self.events, self.device, self.bytes, self.lost = events, device, 0, False

    def route(self):
        self.events.append("route")

    def unroute(self):
        self.events.append("unroute")


@pytest.fixture
def fresh_allocator(monkeypatch):
    monkeypatch.setattr(_pool, "_allocator", {})
    monkeypatch.delenv("ENCORE_TORCH_POOL", raising=False)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    return monkeypatch


def test_a_pool_over_encores_memory_routes_its_segments_around_the_routing(fresh_allocator):
    torch, a = fake_torch()
    events = []
    begin = torch._C._cuda_beginAllocateCurrentThreadToPool
    end = torch._C._cuda_endAllocateToPool
    torch._C._cuda_beginAllocateCurrentThreadToPool = lambda d, p: (events.append("begin"), begin(d, p))
    torch._C._cuda_endAllocateToPool = lambda d, p: (events.append("end"), end(d, p))
    pool = _pool.MethodPool(torch, 0, lambda device: FakeMemory(events, device))
    assert pool.mempool.allocator == "encore's allocator" and pool.memory.device == 0
    from encore import _encore
    assert a.pluggable == (_encore.__file__, "encore_torch_pool_malloc", "encore_torch_pool_free")
    graphs = []
    with pool.routed(graphs.append):
        events.append("capture")
    # Segments PyTorch takes while routed come from this memory, and only then.
    assert events == ["route", "begin", "capture", "end", "unroute"]


@pytest.mark.parametrize("env", [("ENCORE_TORCH_POOL", "caching"),
                                 ("PYTORCH_CUDA_ALLOC_CONF", "garbage_collection_threshold:0.6,expandable_segments:True")])
def test_where_encores_memory_cannot_serve_the_pool_is_pytorchs_own(fresh_allocator, env):
    fresh_allocator.setenv(*env)
    torch, a = fake_torch()
    pool = _pool.MethodPool(torch, 0, lambda device: pytest.fail("no memory of encore's is made"))
    assert pool.mempool.allocator is None and pool.memory is None
    with pool.routed([].append):
        pass


def test_a_sleep_waits_for_captures_then_the_side_streams_then_gives_the_memory_back():
    import encore
    mgr = encore.Manager(flags="")
    events = []
    real = mgr._cxx
    mgr._cxx = types.SimpleNamespace(wait_for_captures=lambda: events.append("captures"),
                                     sleep=lambda: events.append("sleep") or 5)
    body = types.SimpleNamespace(synchronize_streams=lambda: events.append("streams"))
    mgr._bodies = [body]
    try:
        assert mgr.sleep() == 5
    finally:
        mgr._cxx = real
    assert events == ["captures", "streams", "sleep"]


def test_a_pool_that_ends_while_another_is_routed_ends_at_the_next_call_with_none_routed():
    # Note [No MemPool ends while a pool is routed]: PyTorch asserts, in a
    # MemPool's end, that no capture is underway on any thread.
    torch, a = fake_torch()
    ended = []

    class AssertingMemPool(torch.cuda.MemPool):
        def __del__(self):
            assert _pool._routing[0] == 0, "captures_underway.empty() INTERNAL ASSERT FAILED"
            ended.append(self.id)
            super().__del__()

    torch.cuda.MemPool = AssertingMemPool
    other = _pool.MethodPool(torch, 0)  # another method's, routed by the worker meanwhile
    going = _pool.MethodPool(torch, 0)
    going_id = going.id
    with other.routed(lambda lease: None):
        del going  # its method released or collected while the other captures
        gc.collect()
        assert ended == [] and _pool._ending
        _pool.drain_ended_pools()  # a call made while still routed ends nothing
        assert ended == []
    _pool.drain_ended_pools()  # the next call with none routed
    gc.collect()
    assert ended == [going_id] and not _pool._ending
