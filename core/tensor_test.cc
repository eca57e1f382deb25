#include "encore/core/tensor.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace encore
