# SPDX-License-Identifier: Apache-2.0
"""encore.Method: a Python function of tensors as an encore method.

Every CUDA tensor among the arguments is an input, bound where it lies;
everything else is part of the call's signature. A call goes to the C++
method (warmups, capture, replays, refusals); the function itself runs only
in the body encore calls (python/encore/_body.py), never on a replay.
"""

from __future__ import annotations

import inspect
import json
import weakref

from . import _encore
from ._body import BATCH, EAGER, Body, CallState
from ._constants import ConstantList
from ._errors import Error, InvalidArgumentError, StatusCode, UnsupportedTensorError
from ._flags import resolve, split_method_text
from ._log import logger
from ._pool import drain_ended_pools
from ._retire import flush, retire
from ._torch import current_device_and_stream, require_gpu, torch_module
from ._tree import TENSOR, describe_difference, flatten, leaf_paths, unflatten

_MISS = object()


def _weak_run(body):
    """The body's run for encore to call, holding the body weakly: encore's
    Manager (a C++ object the garbage collector cannot see into) must not
    keep its own Python owner alive through a cycle."""
    ref = weakref.ref(body)

    def run(call):
        b = ref()
        if b is None:
            return (StatusCode.INTERNAL, "the Python method was garbage-collected", False)
        return b.run(call)

    return run


def _positional_names(fn) -> list:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


class Method:
    """A method made by :func:`encore.method` or :meth:`encore.Manager.method`.

    Call it with the function's own arguments; it returns what the function
    returns. ``report()``, ``release()`` and ``name`` as in C++.
    """

    def __init__(self, manager, fn, name, constants, flags):
        flush()
        torch = torch_module("encore.method")
        self._torch = torch
        self._fn = fn
        self.name = name
        cxx_text, py_flags = split_method_text(flags or "")
        self._reuse = resolve(name, py_flags, manager._py_flags)["outputs"] == "reuse"
        self._consts = None if constants is None else ConstantList(torch, constants)
        self._params = _positional_names(fn)
        self._ready = False
        self._body = body = Body(torch, fn)
        entries = None if self._consts is None else self._consts.entries
        made = manager._cxx.register_method(name, body=_weak_run(body), constants=entries,
                                            flags_text=cxx_text or None)
        self._cm = made
        body.attach(made)
        manager._bodies.add(self._body)  # a sleep waits for its side streams
        # The call state lives in the C++ method (its lock, the call in
        # flight, the fast path, python/src/py_method.h PyCallSlots), which
        # this layer and the fast path share.
        self._lock = made.lock
        self._manager = manager
        self._on_new_shape = made.on_new_shape
        self._pad = self._on_new_shape == "pad"
        self._reset_python_state()

    def _reset_python_state(self) -> None:
        self._graphs_off = False
        self._cm.result_grad = False
        self._cm.fast = None
        self._body.reset()

    # ----------------------------------------------------------------- call --
    def __call__(self, *args, **kwargs):
        fast = self._cm.fast
        if fast is not None and not kwargs:
            out = fast.call(self, args)
            if out is not _MISS:
                return out
        return self._call(args, kwargs)

    def __del__(self):
        retire(self.__dict__.get("_cm"))

    def _arguments(self, args, kwargs):
        """The call's tensors, its other values (the signature's nodes) and
        why it runs eagerly whatever the graphs (None: it need not)."""
        flush()
        torch = self._torch
        tensors, nodes = [], []
        flatten(args, torch.Tensor, tensors, nodes)
        flatten(kwargs, torch.Tensor, tensors, nodes)
        if not self._ready:
            require_gpu(torch, f"method '{self.name}'")
            self._ready = True
        return tensors, tuple(nodes), self._python_eager_reason(tensors)

    def _call(self, args, kwargs):
        drain_ended_pools()  # Note [No MemPool ends while a pool is routed]
        tensors, nodes, reason = self._arguments(args, kwargs)
        if reason is not None:
            return self._run_eager(reason, args, kwargs)
        with self._lock:
            if self._cm.pools_attention:
                self._tend_pools()
            if self._consts is not None and not self._consts.watch.unchanged():
                self._constants_moved()
            if self._body.graph_nodes is not None and nodes != self._body.graph_nodes:
                if self._other_arguments(args, kwargs, nodes):
                    return self._run_eager("new_shape", args, kwargs)
            return self._run(args, kwargs, tensors, nodes)

    def _tend_pools(self) -> None:
        """Before anything launches: the manager's capture pools woken if
        they sleep (a call while asleep wakes its manager first; encore
        wakes its own graph memory in the run), and this method's graphs
        dropped if its pool's memory could not be mapped back (its next
        captures use a new pool)."""
        self._manager._cxx.wake_pools()
        lost = [p for p in self._body.pools() if p.lost]
        if lost:
            logger.error("event=wake_failed method=%s memory=torch_pool detail=%r", self.name,
                         "the memory of the method's capture pool could not be mapped back; its graphs are "
                         "dropped and it captures again")
            self._release_locked()
        self._manager._cxx.settle_pools()

    def _python_eager_reason(self, tensors):
        torch = self._torch
        for t in tensors:
            if not t.is_cuda:
                return "host_input"
        if torch.is_grad_enabled():
            if self._cm.result_grad or any(t.requires_grad for t in tensors) or (
                    self._consts is not None and self._consts.requires_grad):
                return "autograd"
        return None

    def _signature(self, nodes, tensors):
        """What a graph is kept for: the non-tensor arguments and every
        tensor's shape and dtype; under on_new_shape=pad, dim 0 (the batch)
        left out, as encore's buckets serve every batch."""
        if self._pad:
            shapes = tuple((BATCH,) + tuple(t.shape[1:]) if t.dim() else () for t in tensors)
        else:
            shapes = tuple(t.shape for t in tensors)
        return (nodes, shapes, tuple(t.dtype for t in tensors))

    def _batch(self, tensors):
        return tensors[0].shape[0] if self._pad and tensors and tensors[0].dim() else None

    def _run(self, args, kwargs, tensors, nodes):
        torch = self._torch
        device, stream = current_device_and_stream(torch)
        sig = self._signature(nodes, tensors)
        spec = self._body.specs.get(sig)
        if self._pad and spec is None:
            # A padded graph is captured for a bucket, not for this call's
            # rows: its outputs must be known before encore sees the call.
            result = self._learn_results(args, kwargs, tensors, nodes, sig)
            not_rows = self._body.specs[sig].not_rows
            if not_rows is not None:
                logger.info("event=eager method=%s reason=not_rows detail=%r", self.name, not_rows)
            return result
        if self._pad and spec.not_rows is not None:  # no bucket can serve it
            return self._run_eager("not_rows", args, kwargs)
        outputs = self._outputs_for(spec, device, self._batch(tensors))
        state = CallState(args, kwargs, tensors, nodes, sig, outputs, spec)
        cm = self._cm
        try:
            self._in_encore(state, lambda: cm.run(tensors, outputs, stream))
        except UnsupportedTensorError as e:  # a tensor encore cannot bind: the call runs as PyTorch would
            logger.info("event=eager method=%s reason=unsupported_tensor detail=%r", self.name, str(e))
            return self._run_eager("unsupported_tensor", args, kwargs)
        if state.ran_kind == EAGER and not self._graphs_off:
            self._graphs_off = json.loads(self._cm.report_json())["phase"] == "eager"
        if state.ran_kind is None and not kwargs and state.spec is not None and not self._pad:
            cm.fast = FastPath.for_replay(self, args, tensors, state)
        return self._results(state)

    def _in_encore(self, state, run) -> None:
        """`run()` (encore's run or precapture) with `state` as the call in
        flight, whose body reads it; the function's own exception, from its
        eager run, rather than the error encore made of it."""
        cm = self._cm
        previous, cm.state = cm.state, state
        try:
            run()
        except Error:
            if state.exc is not None:
                raise state.exc from None
            raise
        finally:
            cm.state = previous

    def _learn_results(self, args, kwargs, tensors, nodes, sig, count=True):
        """Runs the function eagerly (a call: reason results_unknown) and
        keeps what it returned as the signature's results."""
        if count:
            self._cm.count_eager_call("results_unknown")
        logger.debug("event=eager method=%s reason=results_unknown", self.name)
        result = self._fn(*args, **kwargs)
        out, out_nodes, leaves = [], [], []
        flatten(result, self._torch.Tensor, out, out_nodes, leaves)
        state = CallState(args, kwargs, tensors, nodes, sig, (), None)
        self._body.learn(state, out, tuple(out_nodes), leaves)
        return result

    def _outputs_for(self, spec, device, batch=None):
        """The output tensors this call hands encore: new ones (or the kept
        ones with outputs=reuse) shaped as the signature's results; none
        while they are unknown or graphs are off."""
        if self._graphs_off:
            return ()
        if spec is None:
            spec = self._body.last_spec if self._on_new_shape in ("refuse", "eager") else None
            if spec is None:
                return ()
        if spec.static is not None or not spec.out:
            return ()
        return spec.new_outputs(self._torch, device, self._reuse, batch)

    def _results(self, state):
        if state.direct is not None:  # the body's own results (eager, no outputs to fill)
            return state.direct
        spec = state.spec if state.spec is not None else self._body.specs.get(state.sig)
        if spec is None:
            raise InvalidArgumentError(f"method '{self.name}': no results were recorded for this call")
        if spec.static is not None:
            tensors = spec.static if self._reuse else [t.clone() for t in spec.static]
            return unflatten(spec.nodes, tensors, spec.leaves)
        if state.leaves is not None:
            return unflatten(state.result_nodes, state.outputs, state.leaves)
        return unflatten(spec.nodes, state.outputs, spec.leaves)

    # ------------------------------------------------- other arguments ------
    def _other_arguments(self, args, kwargs, nodes) -> bool:
        """A call whose non-tensor arguments differ from the graph's: raises
        (refuse), says to run it eagerly (eager), or drops the graphs so the
        method captures again for them (recapture)."""
        policy = self._on_new_shape
        if policy in ("eager", "pad"):
            return True
        if policy == "recapture":
            logger.info("event=recapture method=%s reason=non_tensor_arguments", self.name)
            self._release_locked()
            return False
        paths = leaf_paths(args, kwargs, self._params, self._torch.Tensor)
        raise InvalidArgumentError(
            f"method '{self.name}': {describe_difference(paths, self._body.graph_nodes)}")

    def _run_eager(self, reason, args, kwargs):
        self._cm.count_eager_call(reason)
        logger.debug("event=eager method=%s reason=%s", self.name, reason)
        return self._fn(*args, **kwargs)

    def _constants_moved(self) -> None:
        """The constants read again after the watch saw a change: the same
        ones in new storage of the same shape, dtype and strides are rebound
        (the graphs' references rewritten, no warmup, no capture, where the
        graphs are bound directly; C++ recaptures the rest); anything else
        (a constant added, removed, resized, recast) drops the graphs."""
        old, old_meta = self._consts.entries, self._consts.meta
        new = self._consts.read()
        if new == old:
            return
        moved = [e[0] for e, n in zip(old, new) if e != n] or [e[0] for e in new[len(old):]] or ["(removed)"]
        same = (len(new) == len(old) and old_meta == self._consts.meta
                and all(o[0] == n[0] and o[2:] == n[2:] for o, n in zip(old, new)))
        logger.info("event=constants_moved method=%s constants=%s action=%s", self.name, ",".join(moved[:8]),
                    "rebind" if same else "release")
        if same:
            self._cm.rebind_constants([n for o, n in zip(old, new) if o != n])
            return
        self._cm.release_constants(new)
        self._reset_python_state()

    # ------------------------------------------------------------ public -----
    def precapture(self, *args, **kwargs) -> None:
        """The warmups and capture of this call's signature now, on PyTorch's
        current stream, so that its first call replays (a server captures
        before its first request). Under ``on_new_shape=pad`` with listed
        buckets: every bucket, largest first, from rows [0, B) of the
        example, whose batch must be at least the largest bucket. The
        warmups run the function for real (their writes happen); when the
        signature's results are not known yet, the function runs once more
        first, to learn them. Returns nothing; ``report()["precaptures"]``
        counts the graphs."""
        torch = self._torch
        tensors, nodes, reason = self._arguments(args, kwargs)
        if reason is not None:
            raise InvalidArgumentError(f"method '{self.name}': precapture: this call would run eagerly ({reason}), "
                                       "so it has no graph to capture")
        with self._lock:
            if self._cm.pools_attention:
                self._tend_pools()
            if self._consts is not None and not self._consts.watch.unchanged():
                self._constants_moved()
            if self._body.graph_nodes is not None and nodes != self._body.graph_nodes and self._other_arguments(
                    args, kwargs, nodes):
                raise InvalidArgumentError(f"method '{self.name}': precapture: its non-tensor arguments differ "
                                           "from the graph's, and such calls run eagerly")
            sig = self._signature(nodes, tensors)
            if sig not in self._body.specs:
                self._learn_results(args, kwargs, tensors, nodes, sig, count=False)
            spec = self._body.specs[sig]
            device, stream = current_device_and_stream(torch)
            outputs = self._outputs_for(spec, device, self._batch(tensors))
            state = CallState(args, kwargs, tensors, nodes, sig, outputs, spec)
            self._in_encore(state, lambda: self._cm.precapture(tensors, outputs, stream))

    def release(self) -> None:
        """Drops the graphs, their memory and the captured shapes; the
        method warms up again."""
        with self._lock:
            self._release_locked()

    def _release_locked(self) -> None:
        self._cm.release()
        self._reset_python_state()

    def report(self) -> dict:
        """The C++ report's fields under their JSON names (the calls the
        Python layer ran eagerly, host_input, autograd, ..., counted there
        too, so report_json() says the same)."""
        r = json.loads(self._cm.report_json())
        r["outputs"] = "reuse" if self._reuse else "copy"
        # PyTorch's segments behind the captures' intermediates, over
        # encore's memory (python/src/py_torch_pool.h): what a sleep gives
        # back besides graph_memory_bytes.
        r["torch_pool_bytes"] = sum(p.bytes for p in self._body.pools())
        return r

    def synchronize(self) -> None:
        """Waits for PyTorch's current stream, then raises a failed device
        check of this method."""
        _device, stream = current_device_and_stream(self._torch)
        self._cm.synchronize(stream)

    def __repr__(self) -> str:
        return f"<encore.Method '{self.name}'>"


class FastPath:
    """The replay of a call whose arguments are plain CUDA tensors, as the
    last replay's were, with the same shapes, dtypes and device: no tree
    walk, no signature tuple; one C++ call (python/src/py_fast_call.h) reads
    each tensor once, makes the outputs, runs the method and returns its
    results, or says it missed and the general path runs the call."""

    @staticmethod
    def for_replay(m, args, tensors, state):
        """The fast path for calls like this replay's, or None when its
        arguments are not all plain tensors or its results are kept."""
        spec = state.spec
        if not args or len(tensors) != len(args) or spec.static is not None or not spec.out:
            return None
        torch = m._torch
        if any(type(a) is not torch.Tensor for a in args):
            return None
        own = CallState((), {}, (), state.nodes, state.sig, (), spec)
        watch = None if m._consts is None else m._consts.watch
        hooks = (_MISS, torch, FastPath.after_body, unflatten, watch)
        try:
            return _encore.FastCall(m._cm, tuple(args), spec, own, m._reuse, spec.nodes == (TENSOR,), hooks)
        except (TypeError, ValueError):  # a tensor it cannot describe: the general path serves every call
            return None

    @staticmethod
    def after_body(m, state, error):
        """The body ran (a recapture, an eager call, a verification) or encore
        refused (`error`, the exception of its Status, not raised): what the
        general path would return or raise."""
        m._cm.fast = None
        if error is not None:
            if state.exc is not None:
                raise state.exc from None
            raise error
        return m._results(state)
