// SPDX-License-Identifier: Apache-2.0
#include "encore/core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace encore {
namespace {

TEST(DimsTest, EqualityAndPrinting) {
  Shape a{2, 3, 4, 4};
  Shape b{2, 4, 3, 4};
  EXPECT_EQ(a.size(), 4);
  EXPECT_EQ(a[1], 3);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, (Shape{2, 3, 4, 4}));
  EXPECT_NE(a, (Shape{2, 3, 4}));
  EXPECT_EQ(a.ToString(), "(2,3,4,4)");
  EXPECT_EQ(Shape{}.ToString(), "()");
}

TEST(DimsTest, HoldsEightDimsAndFlagsMore) {
  Shape eight{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(eight.size(), 8);
  EXPECT_FALSE(eight.overflowed());
  Shape nine{1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_TRUE(nine.overflowed());
  EXPECT_EQ(nine.size(), 8);
  int64_t v[9] = {};
  EXPECT_FALSE(Dims::FromSpan(v, 9).ok());
  EXPECT_TRUE(Dims::FromSpan(v, 8).ok());
}

TEST(TensorRefTest, SizesAndContiguity) {
  float x;
  TensorRef t{&x, DType::kFloat16, {2, 3, 4}, {}};
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.span_bytes(), 48u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.effective_strides(), (Strides{12, 4, 1}));
  t.strides = {12, 4, 1};
  EXPECT_TRUE(t.is_contiguous());
  // A transposed view: (2,3) with strides (1,2) spans 6 elements.
  TensorRef tr{&x, DType::kFloat32, {2, 3}, {1, 2}};
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.span_bytes(), 6u * 4u);
  // A padded row: (2,3) with row stride 8 touches 8+3 elements.
  TensorRef padded{&x, DType::kFloat32, {2, 3}, {8, 1}};
  EXPECT_EQ(padded.span_bytes(), 11u * 4u);
  TensorRef empty{nullptr, DType::kFloat32, {0, 3}, {}};
  EXPECT_EQ(empty.span_bytes(), 0u);
}

TEST(TensorRefTest, DTypeSizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8u);
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeName(DType::kFloat16), "float16");
  EXPECT_EQ(DTypeName(DType::kUInt8), "uint8");
}

TEST(TensorRefTest, ValidationNamesTheProblem) {
  float x;
  EXPECT_TRUE(ValidateTensorRef({&x, DType::kFloat32, {2}, {}}, "input 0").ok());
  Status s = ValidateTensorRef({nullptr, DType::kFloat32, {2, 2}, {}}, "method 'f': input 1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "method 'f': input 1 has a null data pointer and shape (2,2)");
  s = ValidateTensorRef({&x, DType::kFloat32, {2, -1}, {}}, "output 0");
  EXPECT_EQ(s.message(), "output 0 has negative size -1 in dim 1");
  s = ValidateTensorRef({&x, DType::kFloat32, {2, 2}, {1}}, "input 0");
  EXPECT_EQ(s.message(), "input 0 has 1 strides for rank 2");
  s = ValidateTensorRef({&x, DType::kFloat32, {2, 2}, {2, -1}}, "input 0");
  EXPECT_EQ(s.message(), "input 0 has negative stride -1 in dim 1");
  EXPECT_TRUE(ValidateTensorRef({nullptr, DType::kFloat32, {0}, {}}, "input 0").ok());
}

// Sizes whose products wrap used to pass validation with a wrapped byte
// count (a 0-byte static buffer, then a ~2^64-byte staging copy).
TEST(TensorRefOverflowTest, ValidationRejectsSizesWhoseProductOverflows) {
  float x;
  const int64_t kMax = INT64_MAX;
  struct Case {
    TensorRef t;
    const char* message;
  } cases[] = {
      {{&x, DType::kFloat32, {int64_t{1} << 32, int64_t{1} << 32}, {}},
       "method 'forward': input 0 has shape (4294967296,4294967296) whose byte size overflows int64"},
      {{&x, DType::kUInt8, {kMax, 2}, {}},
       "method 'forward': input 0 has shape (9223372036854775807,2) whose byte size overflows int64"},
      // The element count fits; the bytes do not (2^62 floats).
      {{&x, DType::kFloat32, {int64_t{1} << 62}, {}},
       "method 'forward': input 0 has shape (4611686018427387904) whose byte size overflows int64"},
      // Neither fits in int64 although they fit in uint64 (2^61 floats).
      {{&x, DType::kFloat32, {int64_t{1} << 61}, {}},
       "method 'forward': input 0 has shape (2305843009213693952) whose byte size overflows int64"},
      // Few elements, but strides that reach past int64.
      {{&x, DType::kFloat32, {3, 2}, {kMax / 2, 1}},
       "method 'forward': input 0 has shape (3,2) and strides (4611686018427387903,1) whose byte size overflows int64"},
      // A span that fits in elements but not in bytes.
      {{&x, DType::kFloat64, {2}, {kMax / 8}},
       "method 'forward': input 0 has shape (2) and strides (1152921504606846975) whose byte size overflows int64"},
      // A broadcast view spans one element but has 2^64 of them.
      {{&x, DType::kInt8, {int64_t{1} << 32, int64_t{1} << 32}, {0, 0}},
       "method 'forward': input 0 has shape (4294967296,4294967296) and strides (0,0) whose byte size overflows int64"},
  };
  for (const Case& c : cases) {
    Status s = ValidateTensorRef(c.t, "method 'forward': input 0");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(TensorRefOverflowTest, LargestSizesThatFitAreAccepted) {
  float x;
  // INT64_MAX bytes exactly.
  EXPECT_TRUE(ValidateTensorRef({&x, DType::kUInt8, {INT64_MAX}, {}}, "t").ok());
  TensorRef big{&x, DType::kFloat32, {int64_t{1} << 30, int64_t{1} << 30}, {}};
  EXPECT_TRUE(ValidateTensorRef(big, "t").ok());
  EXPECT_EQ(big.numel(), int64_t{1} << 60);
  EXPECT_EQ(big.span_bytes(), size_t{1} << 62);
  // A size-0 dim makes the tensor empty whatever the others are, even when
  // its contiguous strides would not fit.
  TensorRef empty{nullptr, DType::kFloat32, {0, int64_t{1} << 40, int64_t{1} << 40}, {}};
  EXPECT_TRUE(ValidateTensorRef(empty, "t").ok());
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.span_bytes(), 0u);
  EXPECT_EQ(empty.contiguous_strides(), (Strides{INT64_MAX, int64_t{1} << 40, 1}));
}

TEST(TensorRefOverflowTest, SizesSaturateInsteadOfWrapping) {
  // numel() and span_bytes() of a tensor validation rejects: never a small
  // wrapped number (a null pointer with a wrapped numel of 0 would pass as
  // empty; a wrapped byte count would shrink a copy).
  TensorRef wraps_to_zero{nullptr, DType::kFloat32, {int64_t{1} << 32, int64_t{1} << 32}, {}};
  EXPECT_EQ(wraps_to_zero.numel(), INT64_MAX);
  EXPECT_EQ(wraps_to_zero.span_bytes(), SIZE_MAX);
  EXPECT_FALSE(ValidateTensorRef(wraps_to_zero, "t").ok());
  TensorRef bytes_wrap{nullptr, DType::kFloat32, {int64_t{1} << 62}, {}};
  EXPECT_EQ(bytes_wrap.numel(), int64_t{1} << 62);
  EXPECT_EQ(bytes_wrap.span_bytes(), SIZE_MAX);
  TensorRef negative{nullptr, DType::kFloat32, {2, -3}, {}};
  EXPECT_EQ(negative.span_bytes(), SIZE_MAX);
}

TEST(TensorRefOverflowTest, TooManyStridesNamesTheLimit) {
  float x;
  Status s = ValidateTensorRef({&x, DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1}},
                               "method 'f': input 0");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "method 'f': input 0 has more than 8 strides");
  s = ValidateTensorRef({&x, DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {}}, "method 'f': input 0");
  EXPECT_EQ(s.message(), "method 'f': input 0 has more than 8 dims");
}

}  // namespace
}  // namespace encore
