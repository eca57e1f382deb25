// SPDX-License-Identifier: Apache-2.0
// CPU tests of the Philox4x32-10 code that the kernels share: Random123's
// known-answer vectors, the counter layout, and the float conversions.
#include "encore/shims/internal/philox_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace encore::shims {
namespace {

void ExpectBlock(PhiloxBlock got, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  EXPECT_EQ(got.v[0], a);
  EXPECT_EQ(got.v[1], b);
  EXPECT_EQ(got.v[2], c);
  EXPECT_EQ(got.v[3], d);
}

// Random123's kat_vectors for philox4x32 with 10 rounds.
TEST(PhiloxReferenceTest, KnownAnswerZero) {
  ExpectBlock(Philox4x32_10(PhiloxBlock{{0, 0, 0, 0}}, 0, 0), 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
}

TEST(PhiloxReferenceTest, KnownAnswerAllOnes) {
  ExpectBlock(Philox4x32_10(PhiloxBlock{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu,
                            0xffffffffu),
              0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu);
}

TEST(PhiloxReferenceTest, KnownAnswerPi) {
  ExpectBlock(Philox4x32_10(PhiloxBlock{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u,
                            0x299f31d0u),
              0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

TEST(PhiloxReferenceTest, StreamBlockPutsCounterInWordsZeroAndOneAndSeedInKey) {
  const uint64_t seed = 0xa4093822299f31d0ull;  // high word 0xa4093822
  const uint64_t counter = 0x85a308d3243f6a88ull;
  PhiloxBlock want = Philox4x32_10(PhiloxBlock{{0x243f6a88u, 0x85a308d3u, 0, 0}}, 0x299f31d0u, 0xa4093822u);
  PhiloxBlock got = PhiloxStreamBlock(seed, counter);
  ExpectBlock(got, want.v[0], want.v[1], want.v[2], want.v[3]);
  // Seed 0, counter 0 is the first known answer.
  ExpectBlock(PhiloxStreamBlock(0, 0), 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
}

TEST(PhiloxReferenceTest, UniformIsTopTwentyFourBitsInZeroOne) {
  EXPECT_EQ(PhiloxUniform(0u), 0.0f);
  EXPECT_EQ(PhiloxUniform(0xffu), 0.0f);
  EXPECT_EQ(PhiloxUniform(0x100u), std::ldexp(1.0f, -24));
  EXPECT_EQ(PhiloxUniform(0xffffffffu), 1.0f - std::ldexp(1.0f, -24));
  EXPECT_LT(PhiloxUniform(0xffffffffu), 1.0f);
  EXPECT_EQ(PhiloxUniform(0x80000000u), 0.5f);
  EXPECT_EQ(PhiloxUniformOpenZero(0u), std::ldexp(1.0f, -24));
  EXPECT_EQ(PhiloxUniformOpenZero(0xffffffffu), 1.0f);
}

TEST(PhiloxReferenceTest, UniformReferenceUsesOneCounterPerFourElements) {
  const uint64_t seed = 0x0123456789abcdefull;
  std::vector<float> all = PhiloxUniformReference(seed, 0, 40);
  ASSERT_EQ(all.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(all[i], PhiloxUniform(PhiloxStreamBlock(seed, i / 4).v[i % 4])) << i;
  }
  // A draw at offset 5 continues the stream from element 20.
  std::vector<float> tail = PhiloxUniformReference(seed, 5, 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(tail[i], all[20 + i]) << i;
  // Different seeds, different streams.
  EXPECT_NE(PhiloxUniformReference(seed + 1, 0, 40), all);
  EXPECT_TRUE(PhiloxUniformReference(seed, 0, 0).empty());
}

TEST(PhiloxReferenceTest, NormalReferenceIsStandardNormal) {
  const int64_t n = 1 << 20;
  std::vector<float> z = PhiloxNormalReference(7, 0, n);
  double sum = 0, sum_sq = 0;
  for (float v : z) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  double mean = sum / n;
  double var = sum_sq / n - mean * mean;
  EXPECT_LT(std::fabs(mean), 0.01);
  EXPECT_LT(std::fabs(var - 1.0), 0.01);
  // An odd count drops the pair's second value, nothing else.
  std::vector<float> odd = PhiloxNormalReference(7, 0, 5);
  ASSERT_EQ(odd.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(odd[i], z[i]);
}

}  // namespace
}  // namespace encore::shims
