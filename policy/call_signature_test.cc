// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/call_signature.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace encore {
namespace {

float g_buf[1024];

TensorRef T(Shape s, DType d = DType::kFloat32, Strides st = {}) { return TensorRef{g_buf, d, s, st}; }

TEST(CallSignatureTest, SameBytesDifferentShapeIsNamedByDim) {
  std::vector<TensorRef> in = {T({2, 3, 4, 4})};
  std::vector<TensorRef> out = {T({2, 3})};
  CallSignature sig = CallSignature::Of(in, out);
  EXPECT_TRUE(sig.Matches(in, out));
  std::vector<TensorRef> in2 = {T({2, 4, 3, 4})};
  EXPECT_FALSE(sig.Matches(in2, out));
  Status s = sig.Compare("forward", in2, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "method 'forward': input 0 has size 4 in dim 1, captured with 3");
}

TEST(CallSignatureTest, NamesRankDtypeStrideAndCount) {
  std::vector<TensorRef> in = {T({2, 3}), T({4})};
  std::vector<TensorRef> out = {T({2, 3})};
  CallSignature sig = CallSignature::Of(in, out);
  struct Case {
    std::vector<TensorRef> in, out;
    const char* message;
  } cases[] = {
      {{T({2, 3}), T({4, 1})}, out, "method 'f': input 1 has rank 2, captured with 1"},
      {{T({2, 3}, DType::kFloat16), T({4})}, out, "method 'f': input 0 has dtype float16, captured with float32"},
      {{T({2, 3}, DType::kFloat32, {1, 2}), T({4})}, out, "method 'f': input 0 has stride 1 in dim 0, captured with 3"},
      {{T({2, 3})}, out, "method 'f': 1 input given, captured with 2"},
      {in, {}, "method 'f': 0 outputs given, captured with 1"},
      {in, {T({2, 4})}, "method 'f': output 0 has size 4 in dim 1, captured with 3"},
      {in, {T({2, 3}, DType::kInt32)}, "method 'f': output 0 has dtype int32, captured with float32"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(sig.Matches(c.in, c.out)) << c.message;
    EXPECT_EQ(sig.Compare("f", c.in, c.out).message(), c.message);
  }
}

TEST(CallSignatureTest, ExplicitContiguousStridesMatchEmptyOnes) {
  std::vector<TensorRef> in = {T({2, 3})};
  CallSignature sig = CallSignature::Of(in, {});
  std::vector<TensorRef> explicit_strides = {T({2, 3}, DType::kFloat32, {3, 1})};
  EXPECT_TRUE(sig.Matches(explicit_strides, {}));
  // Size-1 dims may carry any stride.
  std::vector<TensorRef> one = {T({1, 3})};
  CallSignature sig1 = CallSignature::Of(one, {});
  std::vector<TensorRef> odd = {T({1, 3}, DType::kFloat32, {99, 1})};
  EXPECT_TRUE(sig1.Matches(odd, {}));
}

TEST(CallSignatureTest, PaddedStridesCaptureAndCompare) {
  std::vector<TensorRef> in = {T({2, 3}, DType::kFloat32, {8, 1})};
  CallSignature sig = CallSignature::Of(in, {});
  EXPECT_EQ(sig.inputs()[0].span_bytes, 11u * 4u);
  std::vector<TensorRef> contiguous = {T({2, 3})};
  EXPECT_EQ(sig.Compare("f", contiguous, {}).message(), "method 'f': input 0 has stride 3 in dim 0, captured with 8");
}

TEST(CallSignatureTest, DataPointersDoNotMatter) {
  std::vector<TensorRef> in = {T({5})};
  CallSignature sig = CallSignature::Of(in, {});
  in[0].data = g_buf + 100;
  EXPECT_TRUE(sig.Matches(in, {}));
  EXPECT_EQ(sig.ToString(), "in=[float32(5)] out=[]");
}

TEST(CallSignatureOverflowTest, MoreThanEightDimsNeverMatchARankEightCapture) {
  std::vector<TensorRef> eight = {T({1, 2, 1, 2, 1, 2, 1, 2})};
  CallSignature sig = CallSignature::Of(eight, eight);
  ASSERT_TRUE(sig.Matches(eight, eight));
  // Its first eight dims equal the capture's; the ninth was dropped.
  std::vector<TensorRef> nine = {T({1, 2, 1, 2, 1, 2, 1, 2, 5})};
  ASSERT_TRUE(nine[0].shape.overflowed());
  EXPECT_FALSE(sig.Matches(nine, eight));
  EXPECT_FALSE(sig.Matches(eight, nine));
  EXPECT_EQ(sig.Compare("forward", nine, eight).message(),
            "method 'forward': input 0 has more than 8 dims, captured with rank 8");
  EXPECT_EQ(sig.Compare("forward", eight, nine).message(),
            "method 'forward': output 0 has more than 8 dims, captured with rank 8");
  std::vector<TensorRef> nine_strides = {T({1, 2, 1, 2, 1, 2, 1, 2}, DType::kFloat32, {8, 4, 4, 2, 2, 1, 1, 1, 1})};
  ASSERT_TRUE(nine_strides[0].strides.overflowed());
  EXPECT_FALSE(sig.Matches(nine_strides, eight));
  EXPECT_EQ(sig.Compare("forward", nine_strides, eight).message(), "method 'forward': input 0 has more than 8 strides");
}

TEST(CallSignatureOverflowTest, HugeSizesBesideAZeroDimMatchTheirCapture) {
  // Contiguous strides beyond int64 saturate on both sides of the guard, so
  // an empty tensor with huge dims replays instead of being refused.
  std::vector<TensorRef> in = {TensorRef{nullptr, DType::kFloat32, {0, int64_t{1} << 40, int64_t{1} << 40}, {}}};
  CallSignature sig = CallSignature::Of(in, {});
  EXPECT_EQ(sig.inputs()[0].span_bytes, 0u);
  EXPECT_TRUE(sig.Matches(in, {}));
  EXPECT_TRUE(sig.Compare("f", in, {}).ok());
}

}  // namespace
}  // namespace encore

namespace encore {
namespace {

TEST(RefusalRemedyTest, NamesThePoliciesTheMethodAndRelease) {
  EXPECT_EQ(RefusalRemedy("forward"), "; set on_new_shape=recapture|eager|pad for 'forward', or call Release()");
}

TEST(CallSignatureTest, ANegativeStrideOnASizeOneDimNeverMatches) {
  // The replay fast path trusts a match to mean a valid tensor; validation
  // rejects negative strides, so the match must too.
  float buf[8];
  TensorRef captured{buf, DType::kFloat32, {1, 4}, {4, 1}};
  CallSignature sig = CallSignature::Of({&captured, 1}, {});
  TensorRef same{buf, DType::kFloat32, {1, 4}, {7, 1}};  // a size-1 dim's stride is free
  EXPECT_TRUE(sig.Matches({&same, 1}, {}));
  TensorRef negative{buf, DType::kFloat32, {1, 4}, {-4, 1}};
  EXPECT_FALSE(sig.Matches({&negative, 1}, {}));
  EXPECT_FALSE(ValidateTensorRef(negative, "t").ok());
}

}  // namespace
}  // namespace encore
