# SPDX-License-Identifier: Apache-2.0
"""Methods given as stages: ``encore.method(stages=[f1, encore.eager(f2), f3])``.

Each maximal run of stages not wrapped in :func:`eager` is a piece, captured
as one graph; an eager stage runs eagerly on every call between them. The
first stage gets the method's arguments, each later one what the stage
before returned (a tuple is spread). A piece is an encore method of its own
whose arguments are what the stage before it returned, so its graph is
bound to those tensors where they lie, as any method's is.
"""

from __future__ import annotations

from ._errors import InvalidArgumentError
from ._method import Method


class eager:  # noqa: N801 - used as a marker, like a function
    """Marks a stage that runs eagerly on every call (host work between graphs:
    attention metadata, a library that cannot be captured)."""

    def __init__(self, fn):
        if not callable(fn):
            raise InvalidArgumentError(f"encore.eager: {type(fn).__name__} is not callable")
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "stage")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def _stage_name(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def _chain(fns):
    def piece(*args, **kwargs):
        value = fns[0](*args, **kwargs)
        for f in fns[1:]:
            value = f(*value) if type(value) is tuple else f(value)
        return value
    piece.__name__ = "+".join(_stage_name(f) for f in fns)
    return piece


def _piece_flags(flags: str, first: bool) -> str:
    """A later piece is never refused: the pieces before it already ran, so
    a call that does not fit its graph runs it eagerly (or recaptures, or,
    under pad, replays its bucket)."""
    if first:
        return flags
    text = flags or ""
    if "on_new_shape=recapture" in text or "on_new_shape=pad" in text:
        return text
    return (text + "," if text.strip() else "") + "on_new_shape=eager"


class StagedMethod(Method):
    """A method given as stages; called like a method, reported with its
    pieces. (An encore.Method to its callers; its pieces are the methods
    that hold graphs.)"""

    def __init__(self, manager, stages, name, constants, flags):  # noqa: D107 - no Method.__init__: no body of its own
        if not stages:
            raise InvalidArgumentError(f"method '{name}': stages is empty")
        self.name = name
        self._segments = []  # ("eager", fn, name) or ("piece", Method, stage names)
        run: list = []
        pieces = 0

        def close():
            nonlocal pieces
            if run:
                pieces += 1
                fns = list(run)
                m = Method(manager, _chain(fns), f"{name}/piece{pieces}", constants,
                           _piece_flags(flags, not self._segments))
                self._segments.append(("piece", m, [_stage_name(f) for f in fns]))
                run.clear()

        for s in stages:
            if isinstance(s, eager):
                close()
                self._segments.append(("eager", s.fn, _stage_name(s.fn)))
            elif callable(s):
                run.append(s)
            else:
                raise InvalidArgumentError(f"method '{name}': stage {type(s).__name__} is not callable")
        close()
        self._calls = 0

    def __call__(self, *args, **kwargs):
        self._calls += 1
        return self._through(args, kwargs, precapture=False)

    def precapture(self, *args, **kwargs) -> None:
        """Each piece's warmups and capture for what reaches it from this
        example: the stages run for real, in order (a piece's precapture,
        then the piece, then the stages after it), as a call would."""
        self._through(args, kwargs, precapture=True)

    def _through(self, args, kwargs, precapture):
        value = None
        for i, (kind, fn, _names) in enumerate(self._segments):
            a, k = (args, kwargs) if i == 0 else ((value if type(value) is tuple else (value,)), {})
            if precapture and kind == "piece":
                fn.precapture(*a, **k)
            value = fn(*a, **k)
        return value

    def release(self) -> None:
        for kind, fn, _ in self._segments:
            if kind == "piece":
                fn.release()

    def report(self) -> dict:
        """The pieces' reports summed, with `pieces` as in C++: each piece's
        stages, whether it replays as a graph, why not, its nodes and replays."""
        pieces, total = [], None
        for kind, fn, names in self._segments:
            if kind != "piece":
                continue
            r = fn.report()
            pieces.append({"stages": names, "graphed": r["phase"] == "replay",
                           "reason": r["graphs_off_reason"] or r["binding_reason"],
                           "graph_nodes": r["graph_nodes"], "replays": r["replays"]})
            if total is None:
                total = dict(r)
                total["eager_by_reason"] = dict(r["eager_by_reason"])
            else:
                for key in ("warmup_calls", "captures", "replays", "eager_calls", "refusals", "recaptures",
                            "capture_failures", "graph_nodes", "torch_pool_bytes"):
                    total[key] += r[key]
                for reason, n in r["eager_by_reason"].items():
                    total["eager_by_reason"][reason] = total["eager_by_reason"].get(reason, 0) + n
        total = total or {"eager_by_reason": {}}
        total["name"] = self.name
        total["calls"] = self._calls
        total["pieces"] = pieces
        return total

    def __repr__(self) -> str:
        return f"<encore staged method '{self.name}'>"
