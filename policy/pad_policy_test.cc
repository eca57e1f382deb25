// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/pad_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace encore {
namespace {

float g_buf[1];

TensorRef T(Shape shape, Strides strides = {}) { return TensorRef{g_buf, DType::kFloat32, shape, strides}; }

TEST(CallBatchTest, InputZerosDimZeroIsTheBatch) {
  std::vector<TensorRef> in = {T({5, 16}), T({5})}, out = {T({5, 2, 3})};
  auto b = CallBatch("forward", in, out);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, 5);
  // No inputs: output 0 gives it.
  b = CallBatch("forward", {}, out);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 5);
}

TEST(CallBatchTest, DisagreeingAndRankZeroTensorsAreNamed) {
  std::vector<TensorRef> in = {T({5, 16}), T({4, 16})}, out = {T({5})};
  auto b = CallBatch("forward", in, out);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().message(),
            "method 'forward': input 1 has 4 in dim 0, but input 0 has 5; on_new_shape=pad takes dim 0 of every "
            "input and output as the batch");
  in = {T({5, 16})};
  out = {T({6, 2})};
  EXPECT_EQ(CallBatch("forward", in, out).status().message(),
            "method 'forward': output 0 has 6 in dim 0, but input 0 has 5; on_new_shape=pad takes dim 0 of every "
            "input and output as the batch");
  out = {T({})};
  EXPECT_EQ(CallBatch("forward", in, out).status().message(),
            "method 'forward': output 0 has rank 0; on_new_shape=pad takes dim 0 of every input and output as the "
            "batch");
  in = {T({})};
  EXPECT_EQ(CallBatch("forward", in, {}).status().message(),
            "method 'forward': input 0 has rank 0; on_new_shape=pad takes dim 0 of every input and output as the "
            "batch");
  EXPECT_EQ(CallBatch("forward", {}, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(CheckRowsArePrefixTest, DimZeroMustBeOutermost) {
  std::vector<TensorRef> ok = {T({5, 16}), T({5, 4}, {8, 1}), T({3}), T({5, 0, 2}, {0, 1, 1})};
  EXPECT_TRUE(CheckRowsArePrefix("f", ok, {}).ok());
  // A transposed (column-major) tensor: row r is not after row r-1.
  std::vector<TensorRef> bad = {T({5, 16}, {1, 5})};
  Status s = CheckRowsArePrefix("f", {}, bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("method 'f': output 0 has stride 1 in dim 0, less than the 76 elements of a row"),
            std::string::npos)
      << s;
}

TEST(BucketForTest, SmallestBucketAtLeastTheBatch) {
  const std::vector<int64_t> b = {1, 2, 4, 8};
  EXPECT_EQ(BucketFor(b, 1), 0u);
  EXPECT_EQ(BucketFor(b, 3), 2u);
  EXPECT_EQ(BucketFor(b, 4), 2u);
  EXPECT_EQ(BucketFor(b, 8), 3u);
  EXPECT_EQ(BucketFor(b, 9), 4u);
  EXPECT_EQ(BucketFor({}, 1), 0u);
}

TEST(PaddedViewsTest, OnlyDimZeroChanges) {
  std::vector<TensorRef> in = {T({3, 4}), T({3, 2}, {5, 1})};
  std::vector<TensorRef> v;
  PaddedViews(in, 8, &v);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].shape, (Shape{8, 4}));
  EXPECT_EQ(v[1].shape, (Shape{8, 2}));
  EXPECT_EQ(v[1].strides, (Strides{5, 1}));
  EXPECT_EQ(v[0].data, in[0].data);
}

}  // namespace
}  // namespace encore
