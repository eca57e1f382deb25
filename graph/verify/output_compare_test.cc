// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/output_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace encore {
namespace {

const std::byte* B(const void* p) { return static_cast<const std::byte*>(p); }

TEST(OutputCompareTest, EqualFloatsAreEqual) {
  std::vector<float> a = {1, 2, 3, 4};
  TensorRef t{nullptr, DType::kFloat32, {4}, {}};
  EXPECT_EQ(FirstDifference(t, B(a.data()), B(a.data()), 0), "");
}

TEST(OutputCompareTest, NamesTheFirstDifferingElementAndBothValues) {
  std::vector<float> g = {1, 2, 3.5f, 5}, e = {1, 2, 3, 4};
  TensorRef t{nullptr, DType::kFloat32, {2, 2}, {}};
  EXPECT_EQ(FirstDifference(t, B(g.data()), B(e.data()), 0), "element 2: graph 3.5, eager 3");
}

TEST(OutputCompareTest, ToleranceIsRelativeAboveOneAndAbsoluteBelow) {
  std::vector<float> g = {1000.001f, 0.00001f}, e = {1000.0f, 0.0f};
  TensorRef t{nullptr, DType::kFloat32, {2}, {}};
  EXPECT_NE(FirstDifference(t, B(g.data()), B(e.data()), 0), "");
  EXPECT_EQ(FirstDifference(t, B(g.data()), B(e.data()), 1e-5), "");
  EXPECT_NE(FirstDifference(t, B(g.data()), B(e.data()), 1e-7), "");
}

TEST(OutputCompareTest, NanEqualsNanOnlyUnderTolerance) {
  std::vector<float> g = {NAN}, e = {NAN}, one = {1};
  TensorRef t{nullptr, DType::kFloat32, {1}, {}};
  EXPECT_EQ(FirstDifference(t, B(g.data()), B(e.data()), 0), "");  // the same bits
  EXPECT_EQ(FirstDifference(t, B(g.data()), B(e.data()), 0.1), "");
  EXPECT_NE(FirstDifference(t, B(g.data()), B(one.data()), 0.1), "");
}

TEST(OutputCompareTest, StridesSkipTheGaps) {
  // A (2,2) view with row stride 3: elements 0,1,3,4; 2 and 5 are gaps.
  std::vector<int32_t> g = {1, 2, 99, 4, 5, 98}, e = {1, 2, 0, 4, 5, 0};
  TensorRef t{nullptr, DType::kInt32, {2, 2}, {3, 1}};
  EXPECT_EQ(FirstDifference(t, B(g.data()), B(e.data()), 0), "");
  g[4] = 6;
  EXPECT_EQ(FirstDifference(t, B(g.data()), B(e.data()), 0), "element 3: graph 6, eager 5");
}

TEST(OutputCompareTest, HalfAndBFloat16Widen) {
  uint16_t half_two = 0x4000, bf16_two = 0x4000, half_small = 0x0001;
  EXPECT_EQ(ElementValue(DType::kFloat16, B(&half_two)), 2.0);
  EXPECT_EQ(ElementValue(DType::kBFloat16, B(&bf16_two)), 2.0);
  EXPECT_EQ(ElementValue(DType::kFloat16, B(&half_small)), std::ldexp(1.0, -24));
  int64_t big = -5;
  EXPECT_EQ(ElementValue(DType::kInt64, B(&big)), -5.0);
}

}  // namespace
}  // namespace encore
