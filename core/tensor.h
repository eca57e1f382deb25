// SPDX-License-Identifier: Apache-2.0
// DType, Shape, Strides and TensorRef: the non-owning description of a device
// buffer that methods take as inputs and outputs.
#ifndef ENCORE_CORE_TENSOR_H_
#define ENCORE_CORE_TENSOR_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "encore/core/status.h"

namespace encore {

enum class DType : uint8_t {
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt64,
  kInt32,
  kInt8,
  kUInt8,
  kBool,
};

size_t DTypeSize(DType dtype);
std::string_view DTypeName(DType dtype);

// Up to kMaxRank extents held inline: shapes are compared on every replay, so
// they must not allocate.
class Dims {
 public:
  static constexpr int kMaxRank = 8;

  Dims() = default;
  // More than kMaxRank values is a programming error; the extra ones are
  // dropped and `overflowed()` says so, which TensorRef validation reports.
  Dims(std::initializer_list<int64_t> dims);

  static StatusOr<Dims> FromSpan(const int64_t* data, size_t n);

  int size() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  bool overflowed() const { return overflowed_; }
  int64_t operator[](int i) const { return v_[i]; }
  int64_t& operator[](int i) { return v_[i]; }
  const int64_t* begin() const { return v_; }
  const int64_t* end() const { return v_ + rank_; }
  // Appends a dimension; false if the rank is already kMaxRank.
  bool push_back(int64_t d);

  // Inline: the replay path compares every tensor's sizes and strides.
  friend bool operator==(const Dims& a, const Dims& b) {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Dims& a, const Dims& b) { return !(a == b); }

  // "(2,3,4,4)"
  std::string ToString() const;

 private:
  int64_t v_[kMaxRank] = {};
  int8_t rank_ = 0;
  bool overflowed_ = false;
};

using Shape = Dims;
// Strides in elements, as PyTorch counts them. Empty means contiguous.
using Strides = Dims;

struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  Shape shape;
  Strides strides;

  // The product of the sizes; INT64_MAX when that overflows int64 (never a
  // wrapped, small count: a null pointer must not pass as empty).
  // ValidateTensorRef rejects such a tensor.
  int64_t numel() const;
  // Row-major strides for `shape`, whatever `strides` holds; a stride that
  // overflows int64 (possible only beside a size-0 dim) is INT64_MAX.
  Strides contiguous_strides() const;
  // The strides in force: `strides` if given, else contiguous ones.
  Strides effective_strides() const;
  bool is_contiguous() const;
  // Bytes from the first to one past the last element the view can touch;
  // numel() * element size for a contiguous tensor, 0 if any size is 0.
  // SIZE_MAX when it cannot be computed: a negative size or stride, or a
  // count of elements or bytes beyond INT64_MAX (ValidateTensorRef rejects
  // all of these; SIZE_MAX makes an allocation fail rather than a copy
  // shrink).
  size_t span_bytes() const;
};

// Checks that `t` describes something that can be read or written: a known
// rank, non-negative sizes, strides of the right rank and non-negative, an
// element count, element bytes and byte span that fit in int64, and a
// non-null pointer unless the tensor is empty. `what` names it in the message
// ("method 'forward': input 0").
Status ValidateTensorRef(const TensorRef& t, std::string_view what);

}  // namespace encore

#endif  // ENCORE_CORE_TENSOR_H_
