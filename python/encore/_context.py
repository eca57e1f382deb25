# SPDX-License-Identifier: Apache-2.0
"""The method body running on this thread, and encore.check."""

from __future__ import annotations

import threading

from ._errors import FailedPreconditionError, InvalidArgumentError

_local = threading.local()


def push(call) -> None:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(call)


def pop() -> None:
    _local.stack.pop()


def current():
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def call_stream_waits(torch, call):
    """Makes the call's stream (where encore records its own work: a check,
    a conditional node) wait for the stream the function runs on, the
    method's own during warmups and captures. Returns (the call's stream,
    the running one), or (None, the running one) when they are one."""
    running = torch.cuda.current_stream()
    if running.cuda_stream == call.stream:
        return None, running
    outer = torch.cuda.ExternalStream(call.stream, device=running.device)
    outer.wait_stream(running)
    return outer, running


def check(cond, message: str) -> None:
    """A device-side check of a bool tensor, with no host sync and no
    poisoned context: inside a method, a false ``cond`` makes the method's
    next call raise :class:`encore.FailedPreconditionError` naming the
    method, ``message`` and the call (``checks=trap`` traps instead,
    ``checks=off`` checks nothing). Outside a method it reads ``cond`` on
    the host and raises at once."""
    from ._torch import torch_module
    torch = torch_module("encore.check")
    if not isinstance(cond, torch.Tensor) or cond.dtype != torch.bool or cond.numel() != 1:
        raise InvalidArgumentError(
            f"encore.check: cond must be a bool tensor of one element, got {_describe(cond)}")
    call = current()
    if call is None:
        if not bool(cond):
            raise FailedPreconditionError(f"encore.check failed: {message}")
        return
    if not cond.is_cuda:
        raise InvalidArgumentError("encore.check: cond is a host tensor; inside a method it must be on the GPU")
    # encore launches the check on the call's stream; the function runs on
    # the method's own stream during warmups and captures.
    call_stream_waits(torch, call)
    call.check(cond.data_ptr(), message)


def _describe(x) -> str:
    dtype = getattr(x, "dtype", None)
    shape = getattr(x, "shape", None)
    return f"{type(x).__name__}" + (f" of dtype {dtype} and shape {tuple(shape)}" if dtype is not None else "")
