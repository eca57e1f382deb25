# SPDX-License-Identifier: Apache-2.0
"""PyTorch, imported when a method is made, never by ``import encore``.

The private functions used here are the ones PyTorch's own graph code uses;
python/tests/test_gpu_methods.py's test_private_torch_functions_encore_uses
pins each one.
"""

from __future__ import annotations

from ._errors import UnavailableError

# 2.8: the first release whose allocator routing
# (_cuda_beginAllocateCurrentThreadToPool) sends only the calling thread's
# allocations to a graph's pool, which a capture beside other threads needs.
MIN_VERSION = (2, 8)
_state: dict = {}


def _version_tuple(text: str) -> tuple:
    parts = []
    for piece in text.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def torch_module(what: str = "an encore method"):
    """torch, once checked; UnavailableError naming PyTorch when it is
    missing or older than MIN_VERSION."""
    torch = _state.get("torch")
    if torch is not None:
        return torch
    try:
        import torch  # noqa: F811
    except ImportError as e:
        raise UnavailableError(
            f"{what} needs PyTorch {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer: "
            f"'import torch' failed ({e})") from None
    if _version_tuple(torch.__version__) < MIN_VERSION:
        raise UnavailableError(
            f"{what} needs PyTorch {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer, "
            f"found {torch.__version__}")
    from . import _encore
    _encore.set_torch_dtypes([torch.float32, torch.float16, torch.bfloat16, torch.float64,
                              torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool])
    _state["torch"] = torch
    return torch


def require_gpu(torch, what: str) -> None:
    if not torch.cuda.is_available():
        raise UnavailableError(f"{what}: calling an encore method needs a CUDA GPU, and PyTorch sees none")


def current_device_and_stream(torch) -> tuple:
    """(device, raw stream) of PyTorch's current stream: what a call runs on."""
    device = torch._C._cuda_getDevice()
    return device, torch._C._cuda_getCurrentRawStream(device)


def tensor_span_bytes(t) -> int:
    """Bytes from a tensor's first element to one past the last it reaches."""
    if t.numel() == 0:
        return 0
    last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return (last + 1) * t.element_size()


def view_of(torch, ptr: int, shape, strides, dtype, device: int):
    """A tensor viewing encore's buffer at `ptr` (no copy, no ownership):
    through the storage-from-pointer function PyTorch's cudagraph trees use
    to rebuild their static tensors."""
    size = torch.empty((), dtype=dtype).element_size()
    numel_span = (sum((n - 1) * st for n, st in zip(shape, strides)) + 1) if all(shape) else 0
    storage = torch._C._construct_storage_from_data_pointer(ptr, torch.device("cuda", device), numel_span * size)
    return torch.empty((0,), dtype=dtype, device=f"cuda:{device}").set_(storage, 0, shape, strides)


def is_rng_refusal(exc: BaseException) -> bool:
    """PyTorch's random operations inside a capture it did not begin."""
    return "generator not in capture mode" in str(exc)


def is_capture_refusal(exc: BaseException) -> bool:
    """An operation PyTorch or CUDA refuses inside a capture (.item(), a
    sync, a print of a tensor): the method is simply not graphable."""
    text = str(exc)
    return (is_rng_refusal(exc) or "when stream is capturing" in text
            or "capture" in text and ("not permitted" in text or "invalidated" in text or "unsupported" in text))
