// SPDX-License-Identifier: Apache-2.0
#include "encore/shims/masked_copy.h"

#include <cstdint>
#include <string>

#include "encore/core/cuda_error.h"
#include "encore/shims/internal/kernels.h"

namespace encore::shims {
namespace {

Status RequireContiguous(const TensorRef& t, std::string_view what) {
  if (t.is_contiguous()) return OkStatus();
  return InvalidArgumentError("MaskedCopy: " + std::string(what) + " is not contiguous (strides " +
                              t.strides.ToString() + " for shape " + t.shape.ToString() + ")");
}

Status RequireAligned(const TensorRef& t, std::string_view what) {
  size_t size = DTypeSize(t.dtype);
  if (reinterpret_cast<uintptr_t>(t.data) % size == 0) return OkStatus();
  return InvalidArgumentError("MaskedCopy: " + std::string(what) + " data is not aligned to its " +
                              std::to_string(size) + "-byte " + std::string(DTypeName(t.dtype)) + " elements");
}

}  // namespace

Status MaskedCopy(TensorRef out, const bool* mask, TensorRef src, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(ValidateTensorRef(out, "MaskedCopy: out"));
  ENCORE_RETURN_IF_ERROR(ValidateTensorRef(src, "MaskedCopy: src"));
  if (out.dtype != src.dtype) {
    return InvalidArgumentError("MaskedCopy: out has dtype " + std::string(DTypeName(out.dtype)) +
                                ", src has dtype " + std::string(DTypeName(src.dtype)));
  }
  if (out.shape != src.shape) {
    return InvalidArgumentError("MaskedCopy: out has shape " + out.shape.ToString() + ", src has shape " +
                                src.shape.ToString());
  }
  const int64_t n = out.numel();
  // No element to touch: strides and pointers do not matter.
  if (n == 0) return OkStatus();
  ENCORE_RETURN_IF_ERROR(RequireContiguous(out, "out"));
  ENCORE_RETURN_IF_ERROR(RequireContiguous(src, "src"));
  if (mask == nullptr) {
    return InvalidArgumentError("MaskedCopy: mask is null for shape " + out.shape.ToString());
  }
  ENCORE_RETURN_IF_ERROR(RequireAligned(out, "out"));
  ENCORE_RETURN_IF_ERROR(RequireAligned(src, "src"));
  cudaError_t err = internal::LaunchMaskedSelect(out.data, mask, src.data, n, DTypeSize(out.dtype), stream);
  if (err != cudaSuccess) return CudaStatus(err, "MaskedCopy kernel launch");
  return OkStatus();
}

}  // namespace encore::shims
