# SPDX-License-Identifier: Apache-2.0
"""The memory a Python method's captures allocate from: one
``torch.cuda.MemPool`` per method and device, held the way PyTorch's public
API holds one.

Note [A pool whose lifetime is the method's]
PyTorch's caching allocator counts the users of a private pool
(``PrivatePool::use_count``, c10/cuda/CUDACachingAllocator.cpp): creating it
or routing allocations to it (``beginAllocateToPool``, through
``createOrIncrefPool``) adds one, ``releasePool`` takes one away, and at 0
the pool is left for ``empty_cache`` to free. Routing to a pool id whose
count reached 0 and which the allocator still knows asserts
(``it->second->use_count > 0``). A bare ``graph_pool_handle()`` id has no
user of its own: once the last graph captured into it was dropped (a weight
sync that could not rebind, a bucket the budget dropped), the next capture
with that id asserted, and the method ran eagerly from then on. A
``torch.cuda.MemPool`` is one user for as long as it lives (its constructor
creates the pool, its destructor releases it and empties its cache), so
here:

- each method (each Body) holds a MemPool per device; every capture routes
  this thread's allocations to it (one user more) and the graph it makes
  holds a PoolLease, whose end is that user's release, as
  ``torch.cuda.graph`` does with ``CUDAGraph::reset``;
- the lease holds the MemPool too, so the MemPool's own release comes after
  the last graph's: the count never reaches 0 while the id can be routed to,
  and a graph never outlives the memory it was captured into;
- a method's release (``Method.release()``, constants that changed shape)
  lets its MemPools go and makes new ones for later captures: the old pool's
  memory goes back to the device once its last graph is gone, where an id
  kept forever would keep its cached blocks.
"""

from __future__ import annotations

import contextlib


class MethodPool:
    """A method's MemPool on one device."""

    __slots__ = ("torch", "device", "mempool", "__weakref__")

    def __init__(self, torch, device: int):
        self.torch, self.device = torch, device
        # A MemPool belongs to the device current when it is made.
        with torch.cuda.device(device):
            self.mempool = torch.cuda.MemPool()

    @property
    def id(self):
        return self.mempool.id

    @contextlib.contextmanager
    def routed(self, keep_with_graph):
        """This thread's allocations go to the pool inside the block (only
        this thread's: PyTorch 2.8 and newer); the graph captured meanwhile
        gets a PoolLease through `keep_with_graph`, taken as the routing
        begins, so every begin has its release."""
        c = self.torch._C
        c._cuda_beginAllocateCurrentThreadToPool(self.device, self.id)
        try:
            lease = PoolLease(self)
            keep_with_graph(lease)
            yield
        finally:
            c._cuda_endAllocateToPool(self.device, self.id)


class PoolLease:
    """One graph's share of its method's pool: dropping it tells PyTorch's
    allocator that the graph is gone, so the pool's memory goes back once no
    graph, no tensor and no method uses it. It keeps the pool alive until
    then (Note [A pool whose lifetime is the method's])."""

    __slots__ = ("_pool",)

    def __init__(self, pool: MethodPool):
        self._pool = pool

    def __del__(self):
        pool = self._pool
        try:
            pool.torch._C._cuda_releasePool(pool.device, pool.id)
        except Exception:  # noqa: BLE001 - at exit PyTorch may be gone first
            pass
