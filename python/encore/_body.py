# SPDX-License-Identifier: Apache-2.0
"""What runs inside encore when a method's function runs: on warmups, on the
capture, on eager calls and verification re-runs, never on a replay.

During a capture the function runs on a private stream of the method,
joined to the capture stream (so PyTorch's per-stream cuBLAS workspace of
the graph is never one that eager work uses), with PyTorch's caching
allocator sending this thread's allocations to a pool the method keeps for
its graphs. Its results are copied into the outputs encore hands the call,
which the graph's nodes are bound to.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import threading

from . import _context, _encore
from ._errors import StatusCode
from ._pool import MethodPool
from ._torch import is_capture_refusal, is_rng_refusal, view_of
from ._tree import flatten, unflatten

EAGER, WARMUP, CAPTURE = _encore.CallKind.EAGER, _encore.CallKind.WARMUP, _encore.CallKind.CAPTURE


BATCH = -1  # dim 0 of a result shape under on_new_shape=pad: the call's batch


class OutSpec:
    """The results of one call signature, learned from a run of the body.
    Under on_new_shape=pad a result's dim 0 is BATCH, the call's batch."""

    __slots__ = ("nodes", "leaves", "out", "static", "kept", "unstable", "not_rows")

    def __init__(self, nodes, leaves, out):
        self.nodes = nodes        # the results' structure and non-tensor values
        self.leaves = leaves      # the non-tensor values themselves
        self.out = out            # (shape, dtype) of each result tensor
        self.static = None        # results kept from a capture with no outputs
        self.kept = None          # outputs=reuse: the outputs handed every call
        self.unstable = False     # two runs returned different structures
        self.not_rows = None      # pad: why a result is not rows of the batch

    def new_outputs(self, torch, device, reuse, batch=None):
        """The output tensors a call (of `batch` rows, under pad) hands
        encore: new ones, or with outputs=reuse the same ones every call
        (under pad, views of their first `batch` rows)."""
        shapes = [s if not s or s[0] != BATCH else (batch,) + s[1:] for s, _ in self.out]
        if reuse:
            rows = max([s[0] for s in shapes if s] or [0])
            if self.kept is None or (rows and self.kept_rows() < rows):
                self.kept = [torch.empty(s, dtype=d, device=device) for s, (_, d) in zip(shapes, self.out)]
            if batch is None:
                return self.kept
            return [k[:batch] if s and s[0] == BATCH else k for k, (s, _) in zip(self.kept, self.out)]
        return [torch.empty(s, dtype=d, device=device) for s, (_, d) in zip(shapes, self.out)]

    def kept_rows(self) -> int:
        return min([k.shape[0] for k, (s, _) in zip(self.kept, self.out) if s and s[0] == BATCH] or [0])


class CallState:
    """One call in flight: what the body needs and what it leaves."""

    __slots__ = ("args", "kwargs", "tensors", "nodes", "sig", "outputs", "spec", "exc", "ran_kind",
                 "direct", "result_nodes", "leaves", "index", "arg_leaves", "thread")

    def __init__(self, args, kwargs, tensors, nodes, sig, outputs, spec):
        self.args, self.kwargs, self.tensors, self.nodes = args, kwargs, tensors, nodes
        self.sig, self.outputs, self.spec = sig, outputs, spec
        self.exc = None          # the exception the body's last run raised
        self.ran_kind = None     # the kind of the body's last run, None on a replay
        self.direct = None       # results to return as they are
        self.result_nodes = None
        self.leaves = None
        self.index = None        # encore's index of the call (set when the body runs)
        self.arg_leaves = None   # the arguments' non-tensor values (a snapshot's; else read from args)
        self.thread = threading.get_ident()  # the thread of the call


class _Like:
    """A tensor's dtype, shape and strides without the tensor: what a
    background capture needs of the call that queued it, which it must not
    keep alive. Its data pointer matches no buffer."""

    __slots__ = ("dtype", "shape", "_stride")

    def __init__(self, t):
        self.dtype, self.shape, self._stride = t.dtype, t.shape, t.stride()

    def stride(self):
        return self._stride

    def data_ptr(self):
        return -1


def snapshot(state, torch):
    """What a background capture of `state`'s signature needs, holding no
    tensor of the call: its structure, non-tensor values, shapes and dtypes."""
    leaves = []
    flatten(state.args, torch.Tensor, [], [], leaves)
    flatten(state.kwargs, torch.Tensor, [], [], leaves)
    snap = CallState(None, None, [_Like(t) for t in state.tensors], state.nodes, state.sig,
                     [_Like(t) for t in state.outputs], state.spec)
    snap.arg_leaves = leaves
    return snap


def exception_status(e: BaseException, capturing: bool):
    """What a body returns to encore for an exception: (StatusCode, message,
    refusal); a refusal when PyTorch or CUDA refused an operation inside a
    capture, the method simply not being graphable."""
    if capturing and is_rng_refusal(e):
        return (StatusCode.FAILED_PRECONDITION,
                "rng: PyTorch's random operations would draw the same numbers on every replay, "
                f"so the method runs eagerly ({type(e).__name__}: {e})", True)
    return (StatusCode.INTERNAL, f"{type(e).__name__}: {e}", capturing and is_capture_refusal(e))


_gc_lock = threading.Lock()
_gc_holds = [0, False]  # captures in flight that hold gc off; whether gc was on before the first


@contextlib.contextmanager
def _no_gc():
    """No garbage collection while any encore capture runs a body: a method
    or manager collected then would wait for its last launch, which CUDA
    refuses inside a capture. gc.disable is process-wide and captures run on
    several threads at once (capture=background), so the first to begin
    turns it off and the last to end turns it back on, if it was on."""
    with _gc_lock:
        if _gc_holds[0] == 0:
            _gc_holds[1] = gc.isenabled()
            gc.disable()
        _gc_holds[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holds[0] -= 1
            if _gc_holds[0] == 0 and _gc_holds[1]:
                gc.enable()


class _Refusal(Exception):
    """A capture the method must not make; the call runs eagerly."""


class Body:
    """A method's function as encore runs it, and what its runs taught: the
    results of each call signature and the captured graph's non-tensor
    arguments. It holds nothing of the Python Method or Manager: a
    background capture runs it on the manager's worker thread, and an
    application that dropped its manager then must see the manager
    collected (its pending captures dropped, the one being made waited
    for), not kept alive by the worker's frame."""

    _QUEUED_KEPT = 1024  # snapshots of eager calls kept for background captures

    def __init__(self, torch, fn):
        self._torch = torch
        self._fn = fn
        self._pad = False
        self._background = False
        self.cm = None               # the C++ method (attach), registered with this body
        self.specs: dict = {}        # call signature -> OutSpec learned from a run of the body
        self.last_spec = None        # the spec of the most recent capture
        self.graph_nodes = None      # the captured graph's non-tensor arguments
        self.writes_inputs = False   # a run wrote one of its inputs in place
        self.queued = collections.OrderedDict()  # call index -> snapshot, for background captures
        self._pools: dict = {}
        self._side: dict = {}

    def attach(self, cm) -> None:
        """The C++ method registered with this body, whose reading of the
        flags says how the body runs (made after the body, which it calls)."""
        self.cm = cm
        self._pad = cm.on_new_shape == "pad"
        self._background = cm.capture_mode == "background"

    def reset(self) -> None:
        """Forgets what the runs taught (the graphs were dropped)."""
        self.specs = {}
        self.last_spec = None
        self.graph_nodes = None
        self.writes_inputs = False
        self.queued.clear()
        self._pools.clear()

    def remember(self, index, snap) -> None:
        """Keeps what the eager call `index` was called with, in case it
        queued a background capture (run() reads it there); the oldest go
        first."""
        queued = self.queued
        queued[index] = snap
        while len(queued) > self._QUEUED_KEPT:
            queued.popitem(last=False)

    def pools(self) -> list:
        """The memory behind this method's capture pools (over encore's
        allocator), one per device."""
        return [p.memory for p in list(self._pools.values()) if p.memory is not None]

    def synchronize_streams(self) -> None:
        """Waits for the work of this method's side streams (warmups, whose
        cuBLAS workspace may lie in the capture pool), before a sleep."""
        for s in list(self._side.values()):
            s.synchronize()

    # ------------------------------------------------------------------------
    def run(self, call):
        """encore's body: None, or (StatusCode, message, refusal)."""
        kind = call.kind
        state = self.cm.state
        background = kind == CAPTURE and (state is None or state.thread != threading.get_ident())
        if background:
            # A capture=background capture, on the manager's worker thread:
            # the call that queued it has returned; its snapshot says what
            # it was called with.
            state = self.queued.get(call.index)
            if state is None:
                return (StatusCode.FAILED_PRECONDITION,
                        f"background: the call {call.index} that queued this capture is no longer known", False)
        state.ran_kind = kind
        state.index = call.index
        if kind == EAGER and self._background:
            # This eager call may queue its signature's capture, which the
            # worker records after the call returned: what it needs, now.
            self.remember(call.index, snapshot(state, self._torch))
        try:
            self._run(call, state, kind, background)
            return None
        except _Refusal as e:
            return (StatusCode.FAILED_PRECONDITION, str(e), True)
        except BaseException as e:  # noqa: BLE001 - handed to encore, raised by the eager run
            state.exc = e
            return exception_status(e, kind == CAPTURE)

    def _run(self, call, state, kind, background=False):
        if kind != CAPTURE:
            return self._run_body(call, state, kind)
        with _no_gc():
            return self._run_body(call, state, kind, background)

    def _run_body(self, call, state, kind, background=False):
        torch = self._torch
        views = self._input_views(call, state)
        args, kwargs = unflatten((("tuple", 2),) + state.nodes, views, self._leaves(state))
        before = [v._version for v in views]
        with self._on_stream(call, kind, background) as outer:
            _context.push(call)
            try:
                result = self._fn(*args, **kwargs)
            finally:
                _context.pop()
            tensors, nodes, leaves = [], [], []
            flatten(result, torch.Tensor, tensors, nodes, leaves)
            nodes = tuple(nodes)
            wrote = [i for i, v in enumerate(views) if v._version != before[i]]
            if kind == CAPTURE:
                self._check_capture(state, wrote, nodes)
            self._deliver(call, state, kind, result, tensors, nodes, leaves, views, outer)
        if kind != CAPTURE:
            self.learn(state, tensors, nodes, leaves, wrote)

    def _leaves(self, state):
        if state.arg_leaves is not None:
            return state.arg_leaves
        leaves = []
        flatten(state.args, self._torch.Tensor, [], [], leaves)
        flatten(state.kwargs, self._torch.Tensor, [], [], leaves)
        return leaves

    def _input_views(self, call, state):
        """The caller's own tensors where encore hands them unchanged, else
        views of encore's buffers (the static inputs of a capture, a
        verification's snapshots)."""
        views = []
        for i, t in enumerate(state.tensors):
            ptr, shape, strides = call.input_info(i)
            if ptr == t.data_ptr() and shape == tuple(t.shape) and strides == t.stride():
                views.append(t)
            else:
                views.append(view_of(self._torch, ptr, shape, strides, t.dtype, call.device))
        return views

    @contextlib.contextmanager
    def _on_stream(self, call, kind, background=False):
        """Runs the body on the call's stream (eager, and a background
        capture, whose stream is the method's own on the worker) or on this
        thread's side stream joined to it; yields the call's stream. Nothing
        of it is kept on the Body: a background capture runs on the worker
        thread while calls run on theirs."""
        torch = self._torch
        device = call.device
        current = torch._C._cuda_getCurrentRawStream(device)
        outer = (torch.cuda.current_stream(device) if call.stream == current
                 else torch.cuda.ExternalStream(call.stream, device=device))
        if kind == EAGER:
            with torch.cuda.stream(outer):
                yield outer
            return
        if background:
            # No side stream from PyTorch's pool: its streams are handed out
            # in turn to every thread, so one could be a stream the
            # application launches on from another thread while the worker
            # captures it, which breaks the capture. The worker's stream is
            # encore's, used by nothing else.
            # The library state PyTorch makes per thread on first use (cuBLAS
            # and cuDNN handles, workspaces) is made here, inside the capture:
            # the worker records with its capture mode relaxed (Note [What a
            # background capture may coincide with], graph/runtime/background.cc).
            with torch.cuda.stream(outer), self._routed_to_pool(call, device):
                yield outer
            return
        # A stream per thread: a background capture records on the
        # manager's worker thread while calls run warmups on theirs.
        key = (device, threading.get_ident())
        side = self._side.get(key)
        if side is None:
            side = self._side[key] = torch.cuda.Stream(device=device)
        side.wait_stream(outer)
        try:
            with torch.cuda.stream(side):
                if kind == CAPTURE:
                    with self._routed_to_pool(call, device):
                        yield outer
                else:
                    yield outer
        finally:
            outer.wait_stream(side)

    @contextlib.contextmanager
    def _routed_to_pool(self, call, device):
        """Routes this thread's allocations to the method's pool (one per
        device, shared by its graphs, which never run at once) for the
        capture, as PyTorch's own graph capture does; the graph being
        captured holds a lease on the pool until encore drops it
        (python/encore/_pool.py, Note [A pool whose lifetime is the
        method's]). The pool's memory is encore's, which sleeps with the
        manager (python/src/py_torch_pool.h)."""
        pool = self._pools.get(device)
        if pool is None:
            pool = self._pools[device] = MethodPool(self._torch, device, getattr(self.cm, "torch_pool", None))
        with pool.routed(call.keep_with_graph):
            yield

    def _check_capture(self, state, wrote, nodes):
        if wrote or self.writes_inputs:
            which = wrote[0] if wrote else "an input"
            raise _Refusal(f"writes_input: the function writes input {which} in place; a graph would write "
                           "encore's copy, not the caller's tensor, so the method runs eagerly")
        spec = self.specs.get(state.sig)
        if spec is not None and (spec.unstable or spec.nodes != nodes):
            raise _Refusal("results: the capture returned another structure or other non-tensor values "
                           "than the warmups, which a replay (which does not run the function) would repeat")
        if spec is not None and spec.not_rows is not None:
            raise _Refusal(spec.not_rows)
        self.graph_nodes = state.nodes

    def _deliver(self, call, state, kind, result, tensors, nodes, leaves, views, outer):
        n = call.num_outputs
        infos = [call.output_info(i) for i in range(n)]
        if n and n == len(tensors) and all(
                tuple(r.shape) == info[1] and r.dtype == out.dtype
                for r, info, out in zip(tensors, infos, state.outputs)):
            for r, (ptr, shape, strides), out in zip(tensors, infos, state.outputs):
                if ptr != out.data_ptr():
                    out = view_of(self._torch, ptr, shape, strides, out.dtype, call.device)
                out.copy_(r)
            state.result_nodes, state.leaves = nodes, leaves
            if kind == CAPTURE:
                self.last_spec = self.specs.get(state.sig)
            return
        if kind == CAPTURE:
            if n:
                raise _Refusal("results: the capture's results differ in count, shape or dtype from the "
                               "warmups'")
            if self._pad and tensors:  # the graph of one bucket cannot keep results for all of them
                raise _Refusal("pad: the capture had no outputs to write its results into")
            self._keep_static(state, tensors, nodes, leaves)
            return
        if kind == WARMUP:  # made on the method's stream, used on the caller's
            for t in tensors:
                t.record_stream(outer)
        state.direct = self._unshared(result, tensors, nodes, leaves, views)

    def _keep_static(self, state, tensors, nodes, leaves):
        """A capture with no outputs to fill (no warmup told their shapes):
        the graph writes copies of its results into the method's pool, and
        each replay returns those (cloned, unless outputs=reuse)."""
        spec = OutSpec(nodes, leaves, [(tuple(t.shape), t.dtype) for t in tensors])
        spec.static = [t.clone() for t in tensors]
        self.specs[state.sig] = spec
        self.last_spec = spec
        state.spec = spec

    def _unshared(self, result, tensors, nodes, leaves, views):
        """The function's results, with any that share an input's memory
        copied, so results never alias the caller's tensors."""
        if not tensors:
            return result
        ptrs = {v.untyped_storage().data_ptr() for v in views if v.numel()}
        if not any(t.numel() and t.untyped_storage().data_ptr() in ptrs for t in tensors):
            return result
        fixed = [t.clone() if t.numel() and t.untyped_storage().data_ptr() in ptrs else t for t in tensors]
        return unflatten(nodes, fixed, leaves)

    def learn(self, state, tensors, nodes, leaves, wrote=()):
        """What a run of the body returned, as its signature's OutSpec."""
        if wrote:
            self.writes_inputs = True
        if any(t.requires_grad for t in tensors) and self._torch.is_grad_enabled():
            self.cm.result_grad = True
        out = [(tuple(t.shape), t.dtype) for t in tensors]
        not_rows = None
        if self._pad:
            batch = state.tensors[0].shape[0] if state.tensors and state.tensors[0].dim() else None
            for i, (s, d) in enumerate(out):
                if s and s[0] == batch:
                    out[i] = ((BATCH,) + s[1:], d)
                elif not_rows is None:
                    not_rows = (f"pad: result {i} has {s[0] if s else 'no'} rows in dim 0 for a batch of {batch}; "
                                "every result of a padded method is rows of the batch")
        spec = self.specs.get(state.sig)
        if spec is None:
            spec = self.specs[state.sig] = OutSpec(nodes, leaves, out)
            spec.not_rows = not_rows
        elif spec.static is None and (spec.nodes != nodes or spec.out != out):
            spec.unstable = True
