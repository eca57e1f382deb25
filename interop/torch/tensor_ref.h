// SPDX-License-Identifier: Apache-2.0
// Conversions between PyTorch tensors and encore's TensorRef, neither of
// which copies or owns memory.
#ifndef ENCORE_INTEROP_TORCH_TENSOR_REF_H_
#define ENCORE_INTEROP_TORCH_TENSOR_REF_H_

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore::torch {

// The encore DType of a PyTorch scalar type; InvalidArgument
// "dtype ComplexFloat has no encore DType" for the others.
StatusOr<DType> ToDType(c10::ScalarType type);
// The PyTorch scalar type of every DType.
c10::ScalarType ToScalarType(DType dtype);

// A view of `t`: a strided CUDA tensor of rank <= 8 with non-negative
// strides (the data pointer includes the storage offset). InvalidArgument
// naming the first thing wrong otherwise, checked in this order ("tensor is on cpu, not a CUDA device",
// "rank 9 exceeds 8", "stride -1 in dim 0 is negative", "dtype ComplexFloat
// has no encore DType").
StatusOr<TensorRef> ToTensorRef(const at::Tensor& t);

// A PyTorch view of `t` on CUDA device `device`: no copy, no ownership (the
// memory must outlive the tensor). An undefined tensor when `t` does not
// pass ValidateTensorRef or `device` is negative; this never throws.
at::Tensor ToTensor(const TensorRef& t, int device);

}  // namespace encore::torch

#endif  // ENCORE_INTEROP_TORCH_TENSOR_REF_H_
