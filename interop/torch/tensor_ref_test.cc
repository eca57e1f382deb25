// SPDX-License-Identifier: Apache-2.0
// The conversions without a GPU: PyTorch's CPU tensors, and CUDA views of
// addresses that are never dereferenced.
#include "encore/interop/torch/tensor_ref.h"

#include <ATen/ops/empty.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace encore::torch {
namespace {

using ::testing::HasSubstr;

TEST(TensorRefTest, EveryDTypeRoundTrips) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32,
                  DType::kInt8, DType::kUInt8, DType::kBool}) {
    StatusOr<DType> back = ToDType(ToScalarType(d));
    ASSERT_TRUE(back.ok()) << DTypeName(d) << ": " << back.status();
    EXPECT_EQ(*back, d);
    EXPECT_EQ(c10::elementSize(ToScalarType(d)), DTypeSize(d)) << DTypeName(d);
  }
  EXPECT_EQ(ToScalarType(DType::kBFloat16), c10::ScalarType::BFloat16);
  EXPECT_EQ(ToScalarType(DType::kInt8), c10::ScalarType::Char);
}

TEST(TensorRefTest, ADTypeWithoutAnEncoreDTypeIsNamed) {
  StatusOr<DType> d = ToDType(c10::ScalarType::ComplexFloat);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(), "dtype ComplexFloat has no encore DType");
  at::Tensor c = at::empty({2}, at::TensorOptions().dtype(c10::ScalarType::ComplexFloat));
  EXPECT_EQ(ToTensorRef(c).status().message(), "dtype ComplexFloat has no encore DType");
}

TEST(TensorRefTest, ACpuTensorIsRefused) {
  at::Tensor t = at::empty({2, 3});
  StatusOr<TensorRef> r = ToTensorRef(t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "tensor is on cpu, not a CUDA device");
  EXPECT_THAT(ToTensorRef(at::Tensor()).status().message(), HasSubstr("undefined"));
}

TEST(TensorRefTest, RankAboveEightIsRefused) {
  at::Tensor t = at::empty({1, 1, 1, 1, 1, 1, 1, 1, 2});
  EXPECT_EQ(ToTensorRef(t).status().message(), "rank 9 exceeds 8");
}

// ToTensorRef refuses a negative stride ("stride -1 in dim 0 is negative"),
// but PyTorch 2.11 cannot hold one: TensorImpl replaces it with the
// contiguous stride, so the check guards other producers of at::Tensor.
TEST(TensorRefTest, PyTorchReplacesANegativeStrideAndZeroStridesPass) {
  at::Tensor t = at::empty({3, 2});
  const std::vector<int64_t> sizes{3, 2}, strides{-1, 1};
  t.unsafeGetTensorImpl()->set_sizes_and_strides(c10::IntArrayRef(sizes), c10::IntArrayRef(strides));
  EXPECT_EQ(t.stride(0), 2);
  // A broadcast view (stride 0) passes the rank and stride checks and stops
  // only at the device.
  at::Tensor expanded = at::empty({1, 4}).expand({3, 4});
  ASSERT_EQ(expanded.stride(0), 0);
  EXPECT_EQ(ToTensorRef(expanded).status().message(), "tensor is on cpu, not a CUDA device");
}

TEST(TensorRefTest, ToTensorIsAViewWithTheRefsLayout) {
  // A CUDA view is only metadata until a kernel reads it: no device needed.
  void* fake = reinterpret_cast<void*>(uintptr_t{0x7f0000001000});
  TensorRef ref{fake, DType::kBFloat16, {2, 3, 4}, {}};
  at::Tensor t = ToTensor(ref, 0);
  ASSERT_TRUE(t.defined());
  EXPECT_TRUE(t.is_cuda());
  EXPECT_EQ(t.device().index(), 0);
  EXPECT_EQ(t.scalar_type(), c10::ScalarType::BFloat16);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.data_ptr(), fake);

  TensorRef strided{fake, DType::kFloat32, {3, 2}, {1, 3}};
  at::Tensor s = ToTensor(strided, 1);
  ASSERT_TRUE(s.defined());
  EXPECT_EQ(s.device().index(), 1);
  EXPECT_EQ(s.strides().vec(), (std::vector<int64_t>{1, 3}));
  StatusOr<TensorRef> back = ToTensorRef(s);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, fake);
  EXPECT_EQ(back->shape, (Shape{3, 2}));
  EXPECT_EQ(back->strides, (Strides{1, 3}));
  EXPECT_EQ(back->dtype, DType::kFloat32);
}

TEST(TensorRefTest, ToTensorOfAnInvalidRefIsUndefined) {
  EXPECT_FALSE(ToTensor(TensorRef{nullptr, DType::kFloat32, {4}, {}}, 0).defined());  // null, not empty
  EXPECT_FALSE(ToTensor(TensorRef{reinterpret_cast<void*>(64), DType::kFloat32, {4}, {}}, -1).defined());
  EXPECT_TRUE(ToTensor(TensorRef{nullptr, DType::kFloat32, {0, 4}, {}}, 0).defined());  // empty
}

}  // namespace
}  // namespace encore::torch
