# SPDX-License-Identifier: Apache-2.0
"""encore's events on Python's ``logging``, under the logger ``"encore"``."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger("encore")

# spdlog's levels (trace, debug, info, warn, error, critical) in Python's.
_TO_PYTHON = (logging.DEBUG, logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)


def emit(level: int, text: str) -> None:
    logger.log(_TO_PYTHON[min(max(level, 0), 5)], text)


def spdlog_level() -> int:
    """The spdlog level that lets through what the ``encore`` logger takes
    now, so lines nobody reads are not formatted (per-replay lines are at
    debug)."""
    effective = logger.getEffectiveLevel()
    if effective <= logging.DEBUG:
        return 1
    if effective <= logging.INFO:
        return 2
    if effective <= logging.WARNING:
        return 3
    if effective <= logging.ERROR:
        return 4
    return 5


def python_sink():
    """(emit, level) for a Manager, or (None, 0) when ``ENCORE_LOG_FORMAT``
    asks for encore's own lines on stderr."""
    if os.environ.get("ENCORE_LOG_FORMAT"):
        return None, 0
    return emit, spdlog_level()
