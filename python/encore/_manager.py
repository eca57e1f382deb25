# SPDX-License-Identifier: Apache-2.0
"""encore.Manager and encore.method."""

from __future__ import annotations

import os
import threading
import weakref

from . import _encore
from ._errors import InvalidArgumentError
from ._flags import split_manager_text
from ._log import python_sink
from ._retire import flush, retire


class Manager:
    """Registers methods and holds their flags.

    ``flags`` is the C++ flags text (``"decode:warmup=2;*:binding=direct"``,
    ``*`` for every method); None reads ``ENCORE_METHOD_FLAGS``.
    ``graph_memory_budget`` caps the bytes of graph memory of all methods
    (None: no cap).
    """

    def __init__(self, flags: str | None = None, graph_memory_budget: int | None = None):
        flush()
        source = "flags"
        if flags is None:
            flags = os.environ.get("ENCORE_METHOD_FLAGS", "")
            source = "ENCORE_METHOD_FLAGS"
        cxx_text, self._py_flags = split_manager_text(flags)
        emit, level = python_sink()
        budget = int(graph_memory_budget or 0)
        if budget < 0:
            raise InvalidArgumentError(f"graph_memory_budget is {budget}, must be >= 0 (None: no budget)")
        # ";" and not "": an empty text would make the C++ Manager read the
        # environment, whose Python-only flags it does not know.
        try:
            self._cxx = _encore.Manager.create(cxx_text if cxx_text.strip() else ";", budget, emit, level)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(str(e).replace("flags_text:", source + ":", 1)) from None
        self._methods: dict = {}
        self._bodies = weakref.WeakSet()  # every method's body, the pieces of staged methods too
        self._lock = threading.Lock()
        self._rename = False

    def __del__(self):
        cxx = self.__dict__.get("_cxx")
        if cxx is not None:
            # Gone for the application, though a method still running a body
            # (a background capture on the worker) may hold the C++ manager:
            # no capture body runs after this (Note [What a background
            # capture may coincide with], graph/runtime/background.cc) but
            # the one being made, which is waited for where that can be
            # done (not on the worker itself, not inside a body).
            try:
                cxx.cancel_pending_captures()
                cxx.wait_for_captures()
            except Exception:  # noqa: BLE001 - at exit, or refused inside a body: nothing is waited for
                pass
        retire(cxx)

    def method(self, fn=None, *, name=None, constants=None, flags=None, stages=None):
        """A method of this manager: see :func:`encore.method`."""
        return _make(self, fn, name=name, constants=constants, flags=flags, stages=stages)

    def _register(self, fn, name, constants, flags, stages):
        from ._method import Method
        with self._lock:
            if name in self._methods:
                if not self._rename:
                    raise InvalidArgumentError(f"Register: a method named '{name}' is already registered")
                base, n = name, 2
                while f"{base}#{n}" in self._methods:
                    n += 1
                name = f"{base}#{n}"
            if stages is not None:
                from ._stages import StagedMethod
                m = StagedMethod(self, stages, name, constants, flags)
            else:
                m = Method(self, fn, name, constants, flags)
            self._methods[name] = m
            return m

    def sleep(self) -> int:
        """Waits for the graphs' last launches and gives back the device
        memory behind every graph's own memory (its intermediate and scratch
        buffers, the segments PyTorch's allocator took for its capture; not
        the callers' tensors, not constants), keeping the executables and
        their addresses, which stay reserved: memory other tensors take
        while asleep lies elsewhere. Returns the bytes given back. A
        method's call while asleep wakes the manager first. Results of
        ``outputs=reuse`` do not survive a sleep (nor may they be read while
        asleep). docs/limitations.md says what stays."""
        # The captures pending first (a capture's stream must not be waited
        # on), then the methods' warmups on their side streams, then the
        # graphs' last launches (C++), then the memory goes.
        self._cxx.wait_for_captures()
        for body in list(self._bodies):
            body.synchronize_streams()
        return self._cxx.sleep()

    def wake(self) -> None:
        """Maps the graphs' memory back at the same addresses, so they
        replay with no capture."""
        self._cxx.wake()

    @property
    def asleep(self) -> bool:
        """Whether sleep() gave the graphs' memory back and no wake followed."""
        return self._cxx.asleep

    def synchronize_captures(self) -> None:
        """Waits until no capture this manager's methods queued for the
        background (``capture=background``) is pending."""
        self._cxx.wait_for_captures()

    def report(self) -> dict:
        """Every method's report, by name."""
        return {name: m.report() for name, m in sorted(self._methods.items())}

    def report_json(self) -> str:
        """The C++ Manager::ReportJson() text."""
        return self._cxx.report_json()


_default: list = []
_default_lock = threading.Lock()


def default_manager() -> Manager:
    """The process-wide manager of encore.method: flags from
    ENCORE_METHOD_FLAGS; a second method of one name is named `name#2`."""
    with _default_lock:
        if not _default:
            m = Manager()
            m._rename = True
            _default.append(m)
        return _default[0]


def _make(manager, fn, *, name, constants, flags, stages):
    if fn is not None and stages is not None:
        raise InvalidArgumentError("encore.method: give fn or stages, not both")
    if fn is None and stages is None:
        def decorate(f):
            return _make(manager, f, name=name, constants=constants, flags=flags, stages=None)
        return decorate
    if fn is not None and not callable(fn):
        raise InvalidArgumentError(f"encore.method: fn is a {type(fn).__name__}, not a callable")
    if stages is not None and not isinstance(stages, (list, tuple)):
        raise InvalidArgumentError(f"encore.method: stages is a {type(stages).__name__}, not a list")
    if name is None:
        first = fn if fn is not None else (stages[0] if stages else None)
        name = getattr(first, "__qualname__", None) or getattr(first, "__name__", None) or type(first).__name__
    return (manager or default_manager())._register(fn, name, constants, flags, stages)


def method(fn=None, *, name=None, constants=None, flags=None, manager=None, stages=None):
    """Wraps a function of tensors as an encore method: ``encore.method(fn)``,
    ``@encore.method`` or ``@encore.method(name=..., constants=..., flags=...)``.

    The method runs ``fn`` for its warmup calls, captures it into a CUDA
    graph, and replays the graph after that, bound to the caller's tensors
    where they lie. It is called with ``fn``'s own arguments and returns what
    ``fn`` returns; a call runs on PyTorch's current stream. Every CUDA tensor
    among the arguments (inside tuples, lists and dicts too) is an input;
    every other value is part of the call's signature, compared on each call.

    Arguments:
        ``fn``: the function of tensors to wrap. Left out (``@encore.method(...)``),
            the call returns a decorator. Give ``fn`` or ``stages``, not both.
        ``name``: the method's name in its manager, its flags, reports and
            logs; default ``fn``'s qualified name. The default manager names a
            second method of one name ``name#2``; an explicit ``Manager``
            refuses it (``encore.InvalidArgumentError``).
        ``constants``: what ``fn`` reads or writes besides its arguments:
            ``torch.nn.Module``s (parameters read-only, buffers not), tensors,
            dicts of name to tensor, or a list of these. Listed (an empty list
            is fine), they let encore bind the graph to the inputs with no
            copies; None: the graph is staged (inputs copied inside it). A
            listed constant that moved is never read at its old address.
        ``flags``: this method's flags text without its name
            (``"warmup=2,on_new_shape=recapture,outputs=reuse"``), over the
            manager's defaults and under ``ENCORE_METHOD_FLAGS``; None: the
            manager's.
        ``manager``: the ``encore.Manager`` the method belongs to; None: the
            process-wide default manager (flags from ``ENCORE_METHOD_FLAGS``).
        ``stages``: instead of ``fn``, a list of functions run in turn (each
            gets what the one before returned, a tuple spread); runs of them
            are captured as graphs, and a stage wrapped in ``encore.eager``
            runs eagerly on every call between them.

    Returns an ``encore.Method`` (or a decorator that makes one), with
    ``report()``, ``release()`` and ``name``. Errors in how it is made (``fn``
    and ``stages`` both given, a bad flags text) raise here. See
    docs/python.md.
    """
    return _make(manager, fn, name=name, constants=constants, flags=flags, stages=stages)
