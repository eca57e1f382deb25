# SPDX-License-Identifier: Apache-2.0
"""encore's errors. The classes are made in C++ with the module
(python/src/py_status.h), which raises them from a Status at its edge;
each carries the C++ message unchanged (``str(e)``, ``e.message``) and its
code (``e.code``, the StatusCode's name)."""

from __future__ import annotations

from ._encore import (Error, FailedPreconditionError, InternalError, InvalidArgumentError,
                      ResourceExhaustedError, StatusCode, UnavailableError, UnsupportedTensorError, error_for)

__all__ = ["Error", "FailedPreconditionError", "InternalError", "InvalidArgumentError", "ResourceExhaustedError",
           "StatusCode", "UnavailableError", "UnsupportedTensorError", "error_for"]
