# SPDX-License-Identifier: Apache-2.0
"""encore.cond and encore.while_loop: branches and loops that stay on the
device inside a method's graph (CUDA conditional nodes: two IF nodes for a
branch, a WHILE node for a loop), and plain Python outside one.

Inside a method they go through encore's Call.If and Call.While: a capture
records each branch or the loop body into its node's body graph (no host
read of the predicate when the graph replays); warmup and eager calls read
the predicate on the host. A loop that reaches `max_iterations` stops there
and the method's next call raises FailedPreconditionError naming the method
and the bound.
"""

from __future__ import annotations

import contextlib

from . import _context, _encore
from ._body import exception_status
from ._errors import Error, FailedPreconditionError, InvalidArgumentError
from ._torch import torch_module
from ._tree import flatten, unflatten

_CAPTURE = _encore.CallKind.CAPTURE


def _tensors(values, what):
    torch = torch_module(what)
    out = list(values) if isinstance(values, (list, tuple)) else [values]
    for i, v in enumerate(out):
        if not isinstance(v, torch.Tensor):
            raise InvalidArgumentError(f"{what}: operand {i} is a {type(v).__name__}; carried values and "
                                       "operands are tensors, never Python numbers")
    return torch, out


def _pred_tensor(torch, pred, what):
    if not isinstance(pred, torch.Tensor) or pred.numel() != 1:
        raise InvalidArgumentError(f"{what}: the predicate must be a tensor of one element")
    return pred.reshape(()).to(torch.bool)


@contextlib.contextmanager
def _joined(torch, call):
    """The call's stream (where encore records the node) waits for the work
    of the stream the function runs on; afterwards that stream waits for
    the node."""
    outer, running = _context.call_stream_waits(torch, call)
    if outer is None:
        yield
        return
    try:
        yield
    finally:
        running.wait_stream(outer)


def _body(torch, fn, errors):
    """A Python function as the body of a conditional node."""
    def run(call):
        try:
            stream = torch.cuda.ExternalStream(call.stream)
            with torch.cuda.stream(stream):
                _context.push(call)
                try:
                    fn()
                finally:
                    _context.pop()
            return None
        except BaseException as e:  # noqa: BLE001 - raised again by the caller of If/While
            errors.append(e)
            return exception_status(e, call.kind == _CAPTURE)
    return run


def _recorded(add, errors):
    """Calls encore's If or While (`add`); the body's own exception, if it
    raised one, rather than the error encore made of it."""
    try:
        add()
    except Error:
        if errors:
            raise errors[0] from None
        raise
    if errors:
        raise errors[0]


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, as
    ``torch.cond``: both branches return tensors of the same structure,
    shapes and dtypes."""
    torch, ops = _tensors(operands, "encore.cond")
    p = _pred_tensor(torch, pred, "encore.cond")
    call = _context.current()
    if call is not None and call.kind != _CAPTURE:
        # Inside a method's eager or warmup call: encore reads the flag on
        # the host; an If with an empty body tells it that the method
        # branches on the device, so its capture is prepared for
        # conditional nodes.
        with _joined(torch, call):
            call.if_(p.data_ptr(), lambda c: None)
    if call is None or call.kind != _CAPTURE:
        return true_fn(*ops) if bool(p) else false_fn(*ops)
    return _captured_cond(torch, call, p, true_fn, false_fn, ops)


class _BranchResults:
    """The results both branches of a captured cond write: made by the
    first branch recorded, from what it returned, so no warmup has to have
    run either branch; the other branch must return the same structure,
    shapes and dtypes."""

    def __init__(self, torch, stream):
        self._torch, self._stream = torch, stream
        self.tensors = None
        self.nodes = self.leaves = self.spec = None

    def fill(self, which, result):
        torch = self._torch
        tensors, nodes, leaves = [], [], []
        flatten(result, torch.Tensor, tensors, nodes, leaves)
        spec = [(tuple(t.shape), t.dtype) for t in tensors]
        if self.tensors is None:
            # Made on the stream the method runs on (no kernel: an
            # allocation), as the results of any other operation there.
            with torch.cuda.stream(self._stream):
                self.tensors = [torch.empty(s, dtype=d, device=t.device) for (s, d), t in zip(spec, tensors)]
            self.nodes, self.leaves, self.spec = tuple(nodes), leaves, spec
        elif spec != self.spec or tuple(nodes) != self.nodes:
            raise InvalidArgumentError(
                f"encore.cond: the branches return different results: {which} returned {_describe(spec)}, "
                f"the other branch {_describe(self.spec)}")
        for dst, src in zip(self.tensors, tensors):
            dst.copy_(src)


def _describe(spec) -> str:
    return "[" + ", ".join(f"{tuple(s)} {d}" for s, d in spec) + "]"


def _captured_cond(torch, call, p, true_fn, false_fn, ops):
    not_p = torch.logical_not(p)
    results = _BranchResults(torch, torch.cuda.current_stream())
    errors: list = []

    def branch(fn, which):
        return lambda: results.fill(which, fn(*ops))

    with _joined(torch, call):
        _recorded(lambda: call.if_(p.data_ptr(), _body(torch, branch(true_fn, "true_fn"), errors)), errors)
        _recorded(lambda: call.if_(not_p.data_ptr(), _body(torch, branch(false_fn, "false_fn"), errors)), errors)
    return unflatten(results.nodes, results.tensors, results.leaves)


def while_loop(cond_fn, body_fn, carried_inputs, *, max_iterations):
    """Runs ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` is
    true, as PyTorch's ``while_loop``, at most ``max_iterations`` times;
    returns the final carried values. The caller's carried inputs are never
    written."""
    torch, carried = _tensors(carried_inputs, "encore.while_loop")
    if not isinstance(max_iterations, int) or isinstance(max_iterations, bool) or max_iterations <= 0:
        raise InvalidArgumentError(f"encore.while_loop: max_iterations is {max_iterations!r}, must be an int > 0")
    state = [c.clone() for c in carried]
    flag = _pred_tensor(torch, cond_fn(*state), "encore.while_loop").clone()
    call = _context.current()
    many = isinstance(carried_inputs, (list, tuple))
    if call is None:
        state = _host_loop(torch, cond_fn, body_fn, state, flag, max_iterations)
        return tuple(state) if many else state[0]
    errors: list = []

    def step():
        new = _checked_body(torch, body_fn, state)
        for dst, src in zip(state, new):
            dst.copy_(src)
        flag.copy_(_pred_tensor(torch, cond_fn(*state), "encore.while_loop"))

    with _joined(torch, call):
        _recorded(lambda: call.while_(flag.data_ptr(), _body(torch, step, errors), max_iterations), errors)
    return tuple(state) if many else state[0]


def _checked_body(torch, body_fn, state):
    """body_fn's new values, checked: tensors of the carried shapes and
    dtypes, none aliasing another, and no carried tensor written in place."""
    before = [s._version for s in state]
    new = body_fn(*state)
    if any(s._version != v for s, v in zip(state, before)):
        raise InvalidArgumentError("encore.while_loop: body_fn writes a carried tensor in place; return new "
                                   "values instead")
    new = list(new) if isinstance(new, (list, tuple)) else [new]
    if len(new) != len(state):
        raise InvalidArgumentError(f"encore.while_loop: body_fn returned {len(new)} values for {len(state)} carried")
    ptrs = set()
    for i, (n, s) in enumerate(zip(new, state)):
        if not isinstance(n, torch.Tensor) or n.shape != s.shape or n.dtype != s.dtype:
            raise InvalidArgumentError(f"encore.while_loop: body_fn's value {i} is not a tensor of the carried "
                                       f"shape {tuple(s.shape)} and dtype {s.dtype}")
        if n.numel() and n.untyped_storage().data_ptr() in ptrs:
            raise InvalidArgumentError(f"encore.while_loop: body_fn's value {i} aliases another it returned")
        if n.numel():
            ptrs.add(n.untyped_storage().data_ptr())
    return new


def _host_loop(torch, cond_fn, body_fn, state, flag, max_iterations):
    n = 0
    while bool(flag):
        if n == max_iterations:
            raise FailedPreconditionError(f"encore.while_loop: the loop reached max_iterations={max_iterations} "
                                          "with its condition still true")
        new = _checked_body(torch, body_fn, state)
        state = [t.clone() for t in new]
        flag = _pred_tensor(torch, cond_fn(*state), "encore.while_loop")
        n += 1
    return state
