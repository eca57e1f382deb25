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

The MemPool is made over encore's allocator (``CUDAPluggableAllocator``
over the module's ``encore_torch_pool_malloc`` / ``_free``), so that a
Manager's sleep gives its memory back: python/src/py_torch_pool.h, Note
[PyTorch's capture memory sleeps with the graphs]. Where that allocator
cannot be had (``ENCORE_TORCH_POOL=caching``, expandable segments on, a
PyTorch that refuses it) the MemPool is PyTorch's own caching memory, as
before, and a sleep keeps it (logged once).
"""

from __future__ import annotations

import contextlib
import os
import threading

from . import _retire
from ._log import logger

_allocator: dict = {}
_allocator_lock = threading.Lock()

# Note [No MemPool ends while a pool is routed]
# A MemPool's end empties its cache, and PyTorch asserts there that no
# capture is underway on any thread (captures_underway.empty(),
# synchronize_and_free_events), throwing from a destructor: the process
# aborts (seen on an H100 with torch 2.11). With capture=
# background one method's pool can go (its last graph dropped, its method
# released or collected) while the worker routes another method's capture,
# and a method can be collected inside the application's own capture on
# this thread (torch.cuda.graph; python/tests/test_gpu_collected.py aborted
# so). A pool that would end while any thread is inside `routed`, or while
# this thread's stream captures, is kept in _ending, with the memory behind
# it, and ends at the next method call made with neither
# (drain_ended_pools). The application's capture on another thread cannot
# be seen (as for _retire's owners).
_routing_lock = threading.Lock()
_routing = [0]      # threads inside MethodPool.routed
_ending: list = []  # (mempool, memory) whose end waits for _routing to be 0


def _end(mempool, memory) -> None:
    with _routing_lock:
        if _routing[0] > 0 or _retire.capturing():
            _ending.append((mempool, memory))
            return
    del mempool  # first: its end frees the segments no tensor holds
    del memory   # then the memory, which maps back what PyTorch still keeps


def drain_ended_pools() -> None:
    """Ends the pools kept while a capture was routed, once none is: at the
    start of a method's call, outside any capture of encore's."""
    if not _ending:
        return
    with _routing_lock:
        if _routing[0] > 0 or _retire.capturing():
            return
        ended = _ending[:]
        _ending.clear()
    while ended:
        mempool, memory = ended.pop()
        del mempool  # in _end's order
        del memory


def _why_not_encore_memory() -> str | None:
    """Why a method's pool cannot be encore's memory here, or None."""
    choice = os.environ.get("ENCORE_TORCH_POOL", "encore").strip().lower()
    if choice == "caching":
        return "ENCORE_TORCH_POOL=caching"
    if choice not in ("", "encore"):
        return f"ENCORE_TORCH_POOL={choice!r} is neither 'encore' nor 'caching'"
    for var in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        conf = os.environ.get(var, "").replace(" ", "").lower()
        if "expandable_segments:true" in conf:
            # PyTorch maps expandable segments itself, past a pool's own
            # allocator (pytorch/pytorch#147851).
            return f"{var} turns expandable segments on"
    return None


def pool_allocator(torch):
    """The process's one CUDAPluggableAllocator over encore's memory, or
    None where it cannot be used (the reason logged once). Kept for the
    process's life: every MemPool made over it refers to it."""
    with _allocator_lock:
        if "value" in _allocator:
            return _allocator["value"]
        why = _why_not_encore_memory()
        alloc = None
        if why is None:
            from . import _encore
            try:
                alloc = torch.cuda.memory.CUDAPluggableAllocator(_encore.__file__, _encore.TORCH_POOL_MALLOC,
                                                                  _encore.TORCH_POOL_FREE)
            except Exception as e:  # noqa: BLE001 - any refusal: PyTorch's own memory serves
                why = f"CUDAPluggableAllocator: {type(e).__name__}: {e}"
        if why is not None:
            logger.info("event=torch_pool memory=caching reason=%r detail=%r", why,
                        "a Python method's intermediates stay in PyTorch's caching memory, which "
                        "Manager.sleep() does not give back")
        _allocator["value"] = alloc
        return alloc


class MethodPool:
    """A method's MemPool on one device, and (over encore's allocator) the
    memory behind it, which sleeps with the method's Manager."""

    __slots__ = ("torch", "device", "mempool", "memory", "__weakref__")

    def __init__(self, torch, device: int, make_memory=None):
        self.torch, self.device, self.memory = torch, device, None
        alloc = pool_allocator(torch) if make_memory is not None else None
        # A MemPool belongs to the device current when it is made.
        with torch.cuda.device(device):
            if alloc is not None:
                try:
                    self.mempool = torch.cuda.MemPool(alloc.allocator())
                    self.memory = make_memory(device)
                    return
                except Exception as e:  # noqa: BLE001 - PyTorch's own memory serves
                    logger.info("event=torch_pool memory=caching reason=%r", f"MemPool: {type(e).__name__}: {e}")
            self.mempool = torch.cuda.MemPool()

    def __del__(self):
        mempool, memory = getattr(self, "mempool", None), self.memory
        self.mempool = self.memory = None
        if mempool is not None:
            _end(mempool, memory)

    @property
    def id(self):
        return self.mempool.id

    @contextlib.contextmanager
    def routed(self, keep_with_graph):
        """This thread's allocations go to the pool inside the block (only
        this thread's: PyTorch 2.8 and newer), and the segments PyTorch
        takes for it to this pool's memory; the graph captured meanwhile
        gets a PoolLease through `keep_with_graph`, taken as the routing
        begins, so every begin has its release."""
        c = self.torch._C
        memory = self.memory
        with _routing_lock:
            _routing[0] += 1
        if memory is not None:
            memory.route()
        try:
            c._cuda_beginAllocateCurrentThreadToPool(self.device, self.id)
            try:
                lease = PoolLease(self)
                keep_with_graph(lease)
                yield
            finally:
                c._cuda_endAllocateToPool(self.device, self.id)
        finally:
            if memory is not None:
                memory.unroute()
            with _routing_lock:
                _routing[0] -= 1


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
