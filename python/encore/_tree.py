# SPDX-License-Identifier: Apache-2.0
"""Arguments and results as trees: the tensors in order, and everything else
(structure, ints, floats, strings, ...) as a key a call is compared by.

Leaves compare by type and value (2, 2.0 and True differ; floats by their
bits; other objects by identity).
"""

from __future__ import annotations

import struct

TENSOR = "<tensor>"


class Ident:
    """An object compared by identity; holds it so its id is not reused."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, Ident) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)

    def __repr__(self):
        return repr(self.obj)


def leaf_key(x):
    t = type(x)
    if t is float:
        return ("float", struct.pack("<d", x))
    if t is int or t is bool or t is str or t is bytes or x is None:
        return (t.__name__, x)
    return ("obj", Ident(x))


def leaf_text(k) -> str:
    kind, value = k
    if kind == "float":
        return repr(struct.unpack("<d", value)[0])
    if kind == "obj":
        return f"{type(value.obj).__name__} object {value.obj!r:.60}"
    return repr(value)


def flatten(x, tensor_type, tensors: list, nodes: list, leaves: list | None = None) -> None:
    """Appends `x`'s tensors to `tensors` and its shape to `nodes` (prefix
    order); with `leaves`, the non-tensor values themselves too."""
    t = type(x)
    if isinstance(x, tensor_type):
        tensors.append(x)
        nodes.append(TENSOR)
    elif t is tuple or t is list:
        nodes.append((t.__name__, len(x)))
        for v in x:
            flatten(v, tensor_type, tensors, nodes, leaves)
    elif t is dict:
        nodes.append(("dict", tuple(x.keys())))
        for v in x.values():
            flatten(v, tensor_type, tensors, nodes, leaves)
    else:
        nodes.append(leaf_key(x))
        if leaves is not None:
            leaves.append(x)


def unflatten(nodes, tensors, leaves):
    """The tree `nodes` describes, with `tensors` and `leaves` put back in order."""
    ti, li = iter(tensors), iter(leaves)
    it = iter(nodes)

    def build():
        n = next(it)
        if n == TENSOR:
            return next(ti)
        kind = n[0]
        if kind in ("tuple", "list"):
            items = [build() for _ in range(n[1])]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {k: build() for k in n[1]}
        return next(li)

    return build()


def leaf_paths(args, kwargs, params, tensor_type) -> list:
    """(path, node) for every node of a call's arguments, in flatten's order:
    the names a refusal quotes ("argument 'n'", "argument 'cfg'['mode']")."""
    out = []

    def walk(x, path):
        t = type(x)
        if isinstance(x, tensor_type):
            out.append((path, TENSOR))
        elif t is tuple or t is list:
            out.append((path, (t.__name__, len(x))))
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif t is dict:
            out.append((path, ("dict", tuple(x.keys()))))
            for k, v in x.items():
                walk(v, f"{path}[{k!r}]")
        else:
            out.append((path, leaf_key(x)))

    out.append(("arguments", ("tuple", len(args))))
    for i, a in enumerate(args):
        walk(a, f"'{params[i]}'" if i < len(params) else f"{i}")
    out.append(("keyword arguments", ("dict", tuple(kwargs.keys()))))
    for k, v in kwargs.items():
        walk(v, f"'{k}'")
    return out


def describe_difference(paths, graph_nodes) -> str:
    """Names the first node of a call that differs from the graph's, and
    both values: "argument 'n' is 3, captured with 2"."""
    for (path, node), old in zip(paths, graph_nodes):
        if node == old:
            continue
        if node == TENSOR or old == TENSOR:
            new_text = "a tensor" if node == TENSOR else _node_text(node)
            old_text = "a tensor" if old == TENSOR else _node_text(old)
        else:
            new_text, old_text = _node_text(node), _node_text(old)
        return f"argument {path} is {new_text}, captured with {old_text}"
    return f"the arguments have {len(paths)} parts, captured with {len(graph_nodes)}"


def _node_text(node) -> str:
    kind = node[0]
    if kind in ("tuple", "list"):
        return f"a {kind} of {node[1]}"
    if kind == "dict":
        return f"a dict with keys {list(node[1])}"
    return leaf_text(node)
