# SPDX-License-Identifier: Apache-2.0
"""encore's errors: each carries the C++ message unchanged and its code."""

from __future__ import annotations

# encore::StatusCode's values, named as encore::StatusCodeName names them.
_CODE_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS",
}
_CODES = {name: value for value, name in _CODE_NAMES.items()}


class Error(RuntimeError):
    """An error from encore. ``code`` is the StatusCode's name
    (``"INVALID_ARGUMENT"``); ``str(e)`` is the C++ message."""

    default_code = "UNKNOWN"

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code or self.default_code
        self.message = message


class InvalidArgumentError(Error, ValueError):
    default_code = "INVALID_ARGUMENT"


class FailedPreconditionError(Error):
    default_code = "FAILED_PRECONDITION"


class ResourceExhaustedError(Error):
    default_code = "RESOURCE_EXHAUSTED"


class UnavailableError(Error):
    default_code = "UNAVAILABLE"


class InternalError(Error):
    default_code = "INTERNAL"


_CLASSES = {
    3: InvalidArgumentError,
    8: ResourceExhaustedError,
    9: FailedPreconditionError,
    13: InternalError,
    14: UnavailableError,
}


def code_value(name: str) -> int:
    return _CODES[name]


def error_for(code: int, message: str) -> Error:
    """The exception for a C++ Status of ``code``."""
    cls = _CLASSES.get(code, Error)
    return cls(message, _CODE_NAMES.get(code, "UNKNOWN"))


def raise_if_error(result) -> None:
    """Raises the error a binding call returned as ``(code, message)``."""
    if result is not None:
        raise error_for(result[0], result[1])
