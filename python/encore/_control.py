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

from . import _context
from ._body import exception_status
from ._errors import FailedPreconditionError, InvalidArgumentError, raise_if_error
from ._torch import torch_module
from ._tree import flatten, unflatten

_CAPTURE = 2


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


def _raise(result, errors):
    if errors:
        raise errors[0]
    raise_if_error(result)


# Result shapes of each branch pair, learned from warmups: a capture records
# both branches, so their outputs must exist before either runs.
_cond_specs: dict = {}


def _cond_key(true_fn, false_fn, ops):
    """A branch pair by its code (lambdas written in place are new objects
    on every call, their code is not) and its operands' shapes and dtypes."""
    return (getattr(true_fn, "__code__", id(true_fn)), getattr(false_fn, "__code__", id(false_fn)),
            tuple((tuple(o.shape), o.dtype) for o in ops))


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
            _raise(call.if_(p.data_ptr(), lambda c: None), [])
    if call is None or call.kind != _CAPTURE:
        out = true_fn(*ops) if bool(p) else false_fn(*ops)
        tensors, nodes, leaves = [], [], []
        flatten(out, torch.Tensor, tensors, nodes, leaves)
        _cond_specs[_cond_key(true_fn, false_fn, ops)] = (tuple(nodes), leaves, [(tuple(t.shape), t.dtype) for t in tensors])
        return out
    return _captured_cond(torch, call, p, true_fn, false_fn, ops)


def _captured_cond(torch, call, p, true_fn, false_fn, ops):
    spec = _cond_specs.get(_cond_key(true_fn, false_fn, ops))
    if spec is None:
        raise FailedPreconditionError("encore.cond: the branches' results are learned from a warmup call, and "
                                      "this method captured before any (warmup=0)")
    nodes, leaves, out_spec = spec
    outs = [torch.empty(s, dtype=d, device=p.device) for s, d in out_spec]
    not_p = torch.logical_not(p)
    errors: list = []

    def branch(fn):
        def fill():
            tensors, got, _ = [], [], []
            flatten(fn(*ops), torch.Tensor, tensors, got, _)
            if [(tuple(t.shape), t.dtype) for t in tensors] != out_spec:
                raise InvalidArgumentError("encore.cond: the branches return tensors of other shapes or dtypes")
            for dst, src in zip(outs, tensors):
                dst.copy_(src)
        return fill

    with _joined(torch, call):
        _raise(call.if_(p.data_ptr(), _body(torch, branch(true_fn), errors)), errors)
        _raise(call.if_(not_p.data_ptr(), _body(torch, branch(false_fn), errors)), errors)
    return unflatten(nodes, outs, leaves)


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
        _raise(call.while_(flag.data_ptr(), _body(torch, step, errors), max_iterations), errors)
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
