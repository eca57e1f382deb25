# SPDX-License-Identifier: Apache-2.0
"""Flags only the Python package reads, taken out of a flags text before the
C++ library parses the rest: ``outputs=copy|reuse``."""

from __future__ import annotations

from ._errors import InvalidArgumentError

_PYTHON_KEYS = {"outputs": ("copy", "reuse")}
DEFAULTS = {"outputs": "copy"}


def _split_items(body: str, python: dict) -> list:
    kept = []
    for raw in body.split(","):
        key, eq, value = raw.partition("=")
        key = key.strip()
        if eq and key in _PYTHON_KEYS:
            value = value.strip()
            if value not in _PYTHON_KEYS[key]:
                raise InvalidArgumentError(
                    f"method flags: bad token '{raw.strip()}': {key} takes "
                    + " or ".join(_PYTHON_KEYS[key]))
            python[key] = value
        else:
            kept.append(raw)
    return kept


def split_method_text(text: str) -> tuple[str, dict]:
    """One method's text ("warmup=2,outputs=reuse") as (C++ text, Python flags)."""
    python: dict = {}
    kept = _split_items(text, python) if text.strip() else []
    return ",".join(kept), python


def split_manager_text(text: str) -> tuple[str, list]:
    """A manager's text ("f:outputs=reuse;*:warmup=1") as (C++ text, [(name,
    Python flags)] in text order)."""
    cxx, python = [], []
    for raw in text.split(";"):
        name, colon, body = raw.partition(":")
        if not colon:
            cxx.append(raw)  # the C++ parser names what is wrong with it
            continue
        flags: dict = {}
        kept = _split_items(body, flags)
        if flags:
            python.append((name.strip(), flags))
        if kept or not flags:
            cxx.append(name + ":" + ",".join(kept))
    return ";".join(cxx), python


def resolve(name: str, method_flags: dict, manager_flags: list) -> dict:
    """The Python flags of a method: defaults, its own text, then the
    manager's `*` entries and its named ones, as the C++ library resolves
    its flags."""
    out = dict(DEFAULTS)
    out.update(method_flags)
    for entry, flags in manager_flags:
        if entry == "*":
            out.update(flags)
    for entry, flags in manager_flags:
        if entry == name:
            out.update(flags)
    return out
