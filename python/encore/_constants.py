# SPDX-License-Identifier: Apache-2.0
"""A method's constants from modules, tensors and dicts, and the watch that
notices when their storage moves (a module moved or cast, a parameter
replaced)."""

from __future__ import annotations

from ._errors import InvalidArgumentError
from ._torch import tensor_span_bytes

# Bumped whenever a module's parameters, buffers or submodules are replaced
# or converted: a method whose constants were listed from modules compares
# it once per call and re-reads its constants only when it moved.
generation = [0]
_watch_installed = [False]


def _bump(*_args, **_kwargs):
    generation[0] += 1


def install_watch(torch) -> None:
    """Module registration hooks (public) and a wrapper of Module._apply
    (what .to(), .cuda(), .half() go through), each bumping `generation`."""
    if _watch_installed[0]:
        return
    _watch_installed[0] = True
    mod = torch.nn.modules.module
    for hook in ("register_module_parameter_registration_hook",
                 "register_module_buffer_registration_hook",
                 "register_module_module_registration_hook"):
        register = getattr(mod, hook, None)
        if register is not None:
            register(_bump)
    original = torch.nn.Module._apply
    if getattr(original, "_encore_watch", False):
        return

    def _apply(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        finally:
            _bump()

    _apply._encore_watch = True
    torch.nn.Module._apply = _apply


class ConstantList:
    """What `constants=` listed, read again whenever asked: (name, data_ptr,
    bytes, read_only) per tensor, the tensors themselves, and whether any
    requires grad."""

    def __init__(self, torch, spec):
        self._torch = torch
        self._items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
        for item in self._items:
            if not isinstance(item, (torch.nn.Module, torch.Tensor, dict)):
                raise InvalidArgumentError(
                    f"constants: {type(item).__name__} is not a torch.nn.Module, a tensor or a dict of tensors")
        self.read()

    def read(self):
        torch = self._torch
        entries, tensors, names = [], [], set()

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
            tensors.append(t)

        for i, item in enumerate(self._items):
            if isinstance(item, torch.nn.Module):
                for name, p in item.named_parameters():
                    add(name, p, True)
                for name, b in item.named_buffers():
                    add(name, b, False)
            elif isinstance(item, torch.Tensor):
                add(f"constant{i}", item, False)
            else:
                for name, t in item.items():
                    add(str(name), t, False)
        self.entries = entries
        self.tensors = tensors
        self.requires_grad = any(t.requires_grad for t in tensors)
        return entries
