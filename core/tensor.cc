// SPDX-License-Identifier: Apache-2.0
#include "encore/core/tensor.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

namespace encore {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// a * b, or INT64_MAX when that overflows: a size that cannot be represented
// must never wrap into a small one.
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t p;
  return __builtin_mul_overflow(a, b, &p) ? kInt64Max : p;
}

// The element count, or nullopt when a product overflows int64. Any size 0
// makes it 0 whatever the others are.
std::optional<int64_t> CheckedNumel(const Shape& shape) {
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

// Bytes from the first to one past the last element, or nullopt when a
// step overflows or the total exceeds INT64_MAX (byte counts must fit in
// size_t and in the int64 that offsets and CUDA sizes are computed in).
// nullopt too for a negative size or stride, whose span means nothing.
std::optional<size_t> CheckedSpanBytes(const TensorRef& t) {
  std::optional<int64_t> n = CheckedNumel(t.shape);
  if (!n || *n < 0) return std::nullopt;
  if (*n == 0) return 0;
  const int64_t elem = static_cast<int64_t>(DTypeSize(t.dtype));
  int64_t bytes;
  // The element count in bytes must fit even where strides overlap (a
  // broadcast view touches fewer bytes than it has elements): kernels index
  // up to numel.
  if (__builtin_mul_overflow(*n, elem, &bytes)) return std::nullopt;
  Strides s = t.effective_strides();
  int64_t last = 0;
  for (int i = 0; i < t.shape.size(); ++i) {
    int64_t step;
    if (t.shape[i] < 0 || s[i] < 0) return std::nullopt;
    if (__builtin_mul_overflow(t.shape[i] - 1, s[i], &step) || __builtin_add_overflow(last, step, &last)) {
      return std::nullopt;
    }
  }
  if (__builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, elem, &bytes)) return std::nullopt;
  return static_cast<size_t>(bytes);
}

}  // namespace

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kInt64: return 8;
    case DType::kInt32: return 4;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 1;
    case DType::kBool: return 1;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "unknown";
}

Dims::Dims(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) {
    if (!push_back(d)) overflowed_ = true;
  }
}

StatusOr<Dims> Dims::FromSpan(const int64_t* data, size_t n) {
  if (n > static_cast<size_t>(kMaxRank)) {
    return InvalidArgumentError("rank " + std::to_string(n) + " exceeds the maximum of " +
                                std::to_string(kMaxRank));
  }
  Dims d;
  for (size_t i = 0; i < n; ++i) d.push_back(data[i]);
  return d;
}

bool Dims::push_back(int64_t d) {
  if (rank_ >= kMaxRank) return false;
  v_[rank_++] = d;
  return true;
}

std::string Dims::ToString() const {
  std::string s = "(";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    s += std::to_string(v_[i]);
  }
  s += ')';
  return s;
}

int64_t TensorRef::numel() const {
  return CheckedNumel(shape).value_or(kInt64Max);
}

Strides TensorRef::contiguous_strides() const {
  Strides s;
  for (int i = 0; i < shape.size(); ++i) s.push_back(0);
  int64_t acc = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    s[i] = acc;
    acc = SaturatingMul(acc, std::max<int64_t>(shape[i], 1));
  }
  return s;
}

Strides TensorRef::effective_strides() const {
  return strides.empty() && !shape.empty() ? contiguous_strides() : strides;
}

bool TensorRef::is_contiguous() const {
  if (strides.empty()) return true;
  Strides c = contiguous_strides();
  for (int i = 0; i < shape.size(); ++i) {
    // A dimension of size 1 may carry any stride without moving an element.
    if (shape[i] != 1 && strides[i] != c[i]) return false;
  }
  return true;
}

size_t TensorRef::span_bytes() const {
  return CheckedSpanBytes(*this).value_or(std::numeric_limits<size_t>::max());
}

Status ValidateTensorRef(const TensorRef& t, std::string_view what) {
  std::string w(what);
  if (t.shape.overflowed()) {
    return InvalidArgumentError(w + " has more than " + std::to_string(Dims::kMaxRank) +
                                " dims");
  }
  if (t.strides.overflowed()) {
    // Checked apart from the stride count below, which would print the
    // truncated count ("8 strides for rank 8").
    return InvalidArgumentError(w + " has more than " + std::to_string(Dims::kMaxRank) + " strides");
  }
  if (DTypeSize(t.dtype) == 0) {
    return InvalidArgumentError(w + " has an unknown dtype " +
                                std::to_string(static_cast<int>(t.dtype)));
  }
  for (int i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] < 0) {
      return InvalidArgumentError(w + " has negative size " + std::to_string(t.shape[i]) +
                                  " in dim " + std::to_string(i));
    }
  }
  if (!t.strides.empty()) {
    if (t.strides.size() != t.shape.size()) {
      return InvalidArgumentError(w + " has " + std::to_string(t.strides.size()) +
                                  " strides for rank " + std::to_string(t.shape.size()));
    }
    for (int i = 0; i < t.strides.size(); ++i) {
      if (t.strides[i] < 0) {
        return InvalidArgumentError(w + " has negative stride " + std::to_string(t.strides[i]) +
                                    " in dim " + std::to_string(i));
      }
    }
  }
  // Sizes and strides are non-negative here, which the span needs.
  if (!CheckedSpanBytes(t)) {
    std::string strides = t.strides.empty() ? std::string() : " and strides " + t.strides.ToString();
    return InvalidArgumentError(w + " has shape " + t.shape.ToString() + strides + " whose byte size overflows int64");
  }
  if (t.data == nullptr && t.numel() != 0) {
    return InvalidArgumentError(w + " has a null data pointer and shape " + t.shape.ToString());
  }
  return OkStatus();
}

}  // namespace encore
