# SPDX-License-Identifier: Apache-2.0
"""Letting encore's C++ owners go where CUDA allows it.

A Manager or a Method may be collected at any allocation, and so inside a
CUDA graph capture another library runs on this thread (``torch.cuda.graph``,
``torch.compile``'s graphs). Its C++ owners wait for their last launch and
free device memory as they go: CUDA refuses both during a capture, and the
refusal invalidates that capture. So an owner collected while this thread's
current stream captures is kept, and let go at the next encore call made
outside a capture (a call that misses the replay fast path, a new Manager
or method).

A capture on another thread in CUDA's global mode refuses the same calls
here; PyTorch offers no way to see it, so that case is not covered.
"""

from __future__ import annotations

import sys
import threading

_held: list = []
_lock = threading.Lock()


def capturing() -> bool:
    """Whether this thread's current CUDA stream is capturing."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing()
    except Exception:  # noqa: BLE001 - at exit PyTorch may be half gone
        return False


def retire(owner) -> None:
    """Called as `owner`'s Python holder is collected: keeps it while this
    thread captures (its last reference goes with the holder otherwise)."""
    if owner is not None and capturing():
        with _lock:
            _held.append(owner)


def flush() -> None:
    """Lets the kept owners go, unless this thread captures now."""
    if not _held or capturing():
        return
    with _lock:
        kept = _held[:]
        _held.clear()
    del kept  # their C++ destructors run here, outside any capture of this thread


def held() -> int:
    """How many owners wait (for tests)."""
    return len(_held)
