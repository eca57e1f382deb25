# SPDX-License-Identifier: Apache-2.0
"""A method's constants from modules, tensors and dicts, and the watch that
notices when one moves (a module moved or cast, a parameter replaced, a
tensor's .data set): python/src/py_constant_watch.h, Note [Finding moved
constants]. Nothing here touches PyTorch outside encore's own calls."""

from __future__ import annotations

from . import _encore
from ._errors import InvalidArgumentError
from ._torch import tensor_span_bytes


class ConstantList:
    """What `constants=` listed, read again whenever asked: (name, data_ptr,
    bytes, read_only) per tensor, the tensors themselves, whether any
    requires grad, and `watch`, which says at each call whether any of it
    may have changed since the last read."""

    def __init__(self, torch, spec):
        self._torch = torch
        self.watch = _encore.ConstantWatch(torch.Tensor.data_ptr)
        self._items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
        for item in self._items:
            if not isinstance(item, (torch.nn.Module, torch.Tensor, dict)):
                raise InvalidArgumentError(
                    f"constants: {type(item).__name__} is not a torch.nn.Module, a tensor or a dict of tensors")
        self.read()

    def read(self):
        torch = self._torch
        entries, tensors, names, dicts, meta = [], [], set(), [], []

        def add(name, t, read_only):
            if not isinstance(t, torch.Tensor):
                raise InvalidArgumentError(f"constants: '{name}' is a {type(t).__name__}, not a tensor")
            if t.numel() == 0:
                return
            base, n = name, 2
            while name in names:
                name, n = f"{base}#{n}", n + 1
            names.add(name)
            entries.append((name, t.data_ptr(), tensor_span_bytes(t), read_only))
            meta.append((tuple(t.shape), t.stride(), t.dtype, t.device))
            tensors.append(t)

        for i, item in enumerate(self._items):
            if isinstance(item, torch.nn.Module):
                for name, p in item.named_parameters():
                    add(name, p, True)
                for name, b in item.named_buffers():
                    add(name, b, False)
                for mod in item.modules():
                    dicts.extend((mod._parameters, mod._buffers, mod._modules))
            elif isinstance(item, torch.Tensor):
                add(f"constant{i}", item, False)
            else:
                for name, t in item.items():
                    add(str(name), t, False)
                dicts.append(item)
        self.entries = entries
        self.meta = meta  # per entry: shape, strides, dtype, device (a rebind keeps them)
        self.tensors = tensors
        self.requires_grad = any(t.requires_grad for t in tensors)
        self.watch.set(dicts, tensors)
        return entries
