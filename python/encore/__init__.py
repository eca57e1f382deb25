# SPDX-License-Identifier: Apache-2.0
"""encore: CUDA graph capture and replay for PyTorch methods.

``import encore`` needs neither a GPU nor PyTorch; making a method needs
PyTorch 2.8 or newer, and calling one a CUDA GPU. See docs/python.md.
"""

from ._encore import __version__
from ._errors import (Error, FailedPreconditionError, InternalError, InvalidArgumentError,
                      ResourceExhaustedError, UnavailableError)
from ._context import check
from ._control import cond, while_loop
from ._manager import Manager, method
from ._method import Method
from ._stages import eager

__all__ = [
    "__version__", "Error", "FailedPreconditionError", "InternalError", "InvalidArgumentError",
    "ResourceExhaustedError", "UnavailableError", "Manager", "Method", "check", "cond", "eager", "method", "while_loop",
]
