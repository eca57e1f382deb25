// SPDX-License-Identifier: Apache-2.0
// The checksum's definition (host reference): every single-bit flip in any
// word changes it, swapped words change it, a partial last word counts its
// bytes only, and it is a plain sum of per-word terms.
#include "encore/graph/verify/internal/checksum_hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace encore::checksum {
namespace {

std::vector<std::byte> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

TEST(ChecksumHashTest, Mix64IsInjectiveOnSamples) {
  // A bijection maps distinct inputs to distinct outputs; sample neighbours.
  for (uint64_t x = 0; x < 4096; ++x) {
    for (int bit = 0; bit < 64; ++bit) EXPECT_NE(Mix64(x), Mix64(x ^ (uint64_t{1} << bit)));
  }
}

TEST(ChecksumHashTest, EverySingleBitFlipChangesTheChecksum) {
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{13}, size_t{64}, size_t{1001}}) {
    std::vector<std::byte> v = Random(n, static_cast<uint32_t>(n));
    const uint64_t base = HostBlockChecksum(v.data(), n);
    for (size_t i = 0; i < n; ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        v[i] ^= static_cast<std::byte>(1 << bit);
        EXPECT_NE(HostBlockChecksum(v.data(), n), base) << "n " << n << " byte " << i << " bit " << bit;
        v[i] ^= static_cast<std::byte>(1 << bit);
      }
    }
  }
}

TEST(ChecksumHashTest, SwappedWordsChangeTheChecksum) {
  std::vector<std::byte> v = Random(256, 3);
  const uint64_t base = HostBlockChecksum(v.data(), v.size());
  for (size_t a = 0; a < 32; ++a) {
    for (size_t b = a + 1; b < 32; ++b) {
      std::vector<std::byte> w = v;
      std::swap_ranges(w.begin() + 8 * a, w.begin() + 8 * a + 8, w.begin() + 8 * b);
      EXPECT_NE(HostBlockChecksum(w.data(), w.size()), base) << a << " <-> " << b;
    }
  }
}

TEST(ChecksumHashTest, IdenticalBytesGiveIdenticalChecksums) {
  std::vector<std::byte> a = Random(777, 9);
  std::vector<std::byte> b = a;
  EXPECT_EQ(HostBlockChecksum(a.data(), a.size()), HostBlockChecksum(b.data(), b.size()));
}

TEST(ChecksumHashTest, PartialLastWordIsZeroPadded) {
  std::vector<std::byte> v = Random(19, 5);
  std::vector<std::byte> padded = v;
  padded.resize(24);  // zeros
  uint64_t want = 0;
  for (size_t i = 0; i < 3; ++i) {
    uint64_t w;
    std::memcpy(&w, padded.data() + 8 * i, 8);
    want += WordHash(w, static_cast<uint32_t>(i));
  }
  EXPECT_EQ(HostBlockChecksum(v.data(), 19), want);
}

TEST(ChecksumHashTest, AllZeroWordsStillDependOnTheirCount) {
  std::vector<std::byte> z(64);
  EXPECT_NE(HostBlockChecksum(z.data(), 32), HostBlockChecksum(z.data(), 64));
  EXPECT_NE(HostBlockChecksum(z.data(), 0), HostBlockChecksum(z.data(), 8));
}

}  // namespace
}  // namespace encore::checksum
