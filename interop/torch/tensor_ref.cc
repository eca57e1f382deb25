// SPDX-License-Identifier: Apache-2.0
#include "encore/interop/torch/tensor_ref.h"

#include <ATen/ops/from_blob.h>
#include <c10/core/DeviceType.h>

#include <exception>
#include <string>
#include <vector>

namespace encore::torch {

StatusOr<DType> ToDType(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float: return DType::kFloat32;
    case c10::ScalarType::Half: return DType::kFloat16;
    case c10::ScalarType::BFloat16: return DType::kBFloat16;
    case c10::ScalarType::Double: return DType::kFloat64;
    case c10::ScalarType::Long: return DType::kInt64;
    case c10::ScalarType::Int: return DType::kInt32;
    case c10::ScalarType::Char: return DType::kInt8;
    case c10::ScalarType::Byte: return DType::kUInt8;
    case c10::ScalarType::Bool: return DType::kBool;
    default: break;
  }
  return InvalidArgumentError("dtype " + std::string(c10::toString(type)) + " has no encore DType");
}

c10::ScalarType ToScalarType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return c10::ScalarType::Float;
    case DType::kFloat16: return c10::ScalarType::Half;
    case DType::kBFloat16: return c10::ScalarType::BFloat16;
    case DType::kFloat64: return c10::ScalarType::Double;
    case DType::kInt64: return c10::ScalarType::Long;
    case DType::kInt32: return c10::ScalarType::Int;
    case DType::kInt8: return c10::ScalarType::Char;
    case DType::kUInt8: return c10::ScalarType::Byte;
    case DType::kBool: return c10::ScalarType::Bool;
  }
  return c10::ScalarType::Undefined;
}

StatusOr<TensorRef> ToTensorRef(const at::Tensor& t) {
  if (!t.defined()) return InvalidArgumentError("tensor is undefined");
  if (t.layout() != c10::kStrided) return InvalidArgumentError("tensor is not strided (a sparse or other layout)");
  if (t.dim() > Dims::kMaxRank) {
    return InvalidArgumentError("rank " + std::to_string(t.dim()) + " exceeds " + std::to_string(Dims::kMaxRank));
  }
  TensorRef ref;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t stride = t.stride(d);
    if (stride < 0) {
      return InvalidArgumentError("stride " + std::to_string(stride) + " in dim " + std::to_string(d) +
                                  " is negative");
    }
    (void)ref.shape.push_back(t.size(d));  // cannot fail: the rank was checked
    (void)ref.strides.push_back(stride);
  }
  ENCORE_ASSIGN_OR_RETURN(ref.dtype, ToDType(t.scalar_type()));
  if (!t.is_cuda()) {
    return InvalidArgumentError("tensor is on " + c10::DeviceTypeName(t.device().type(), /*lower_case=*/true) +
                                ", not a CUDA device");
  }
  ref.data = t.data_ptr();
  return ref;
}

at::Tensor ToTensor(const TensorRef& t, int device) {
  if (device < 0 || !ValidateTensorRef(t, "tensor").ok()) return at::Tensor();
  const std::vector<int64_t> sizes(t.shape.begin(), t.shape.end());
  const Strides strides = t.effective_strides();
  const std::vector<int64_t> stride_vec(strides.begin(), strides.end());
  const c10::Device where(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device));
  try {
    // target_device: PyTorch need not ask CUDA where the pointer lives (a
    // driver call per view, during captures too).
    return at::for_blob(t.data, sizes)
        .strides(stride_vec)
        .target_device(where)
        .options(at::TensorOptions().dtype(ToScalarType(t.dtype)).device(where))
        .make_tensor();
  } catch (const std::exception&) {
    return at::Tensor();
  }
}

}  // namespace encore::torch
