// SPDX-License-Identifier: Apache-2.0
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11), written once for both the host and the device: the generator's CUDA
// kernels and the CPU reference below run this same code, so a GPU draw can be
// compared with the CPU bit for bit. Compiles with nvcc and with a plain C++
// compiler.
//
// How Philox (encore::shims::Philox) lays out its stream: the key is the seed
// (low word first), and output element i of a draw that starts at device
// offset `offset` comes from word i % 4 of the block for counter
// offset + i / 4, the counter's 64 bits in words 0 (low) and 1 (high), words 2
// and 3 zero. A draw of n elements moves the offset on by ceil(n / 4).
#ifndef ENCORE_SHIMS_INTERNAL_PHILOX_REFERENCE_H_
#define ENCORE_SHIMS_INTERNAL_PHILOX_REFERENCE_H_

#include <cmath>
#include <cstdint>

#include <vector>

#if defined(__CUDACC__)
#define ENCORE_PHILOX_HD __host__ __device__ __forceinline__
#else
#define ENCORE_PHILOX_HD inline
#endif

namespace encore::shims {

struct PhiloxBlock {
  uint32_t v[4];
};

namespace philox_internal {

constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kW1 = 0xBB67AE85u;  // sqrt(3) - 1

ENCORE_PHILOX_HD void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
#if defined(__CUDA_ARCH__)
  *hi = __umulhi(a, b);
  *lo = a * b;
#else
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
#endif
}

ENCORE_PHILOX_HD PhiloxBlock Round(PhiloxBlock c, uint32_t k0, uint32_t k1) {
  uint32_t hi0, lo0, hi1, lo1;
  MulHiLo(kM0, c.v[0], &hi0, &lo0);
  MulHiLo(kM1, c.v[2], &hi1, &lo1);
  return PhiloxBlock{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
}

}  // namespace philox_internal

// The Philox4x32 bijection with 10 rounds, as Random123's philox4x32(ctr, key).
ENCORE_PHILOX_HD PhiloxBlock Philox4x32_10(PhiloxBlock counter, uint32_t key0, uint32_t key1) {
  using namespace philox_internal;
  PhiloxBlock c = counter;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key0 += kW0;
      key1 += kW1;
    }
    c = Round(c, key0, key1);
  }
  return c;
}

// The block behind elements 4*counter .. 4*counter+3 of the stream for `seed`.
ENCORE_PHILOX_HD PhiloxBlock PhiloxStreamBlock(uint64_t seed, uint64_t counter) {
  PhiloxBlock c{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}};
  return Philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// [0, 1): the top 24 bits scaled by 2^-24, which a float holds exactly, so
// the host and device agree bit for bit and 1.0 never comes out.
ENCORE_PHILOX_HD float PhiloxUniform(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// (0, 1]: for the logarithm in Box-Muller, which must not see 0.
ENCORE_PHILOX_HD float PhiloxUniformOpenZero(uint32_t bits) {
  return static_cast<float>((bits >> 8) + 1u) * (1.0f / 16777216.0f);
}

// Box-Muller on a pair of words: two standard normals. Elements 4k, 4k+1 come
// from words 0 and 1 of a block, 4k+2, 4k+3 from words 2 and 3. Device and
// host libm differ in the last bits here, so only Uniform is bit-exact.
ENCORE_PHILOX_HD void PhiloxBoxMuller(uint32_t a, uint32_t b, float* z0, float* z1) {
  float u = PhiloxUniform(b);
#if defined(__CUDA_ARCH__)
  float r = sqrtf(-2.0f * logf(PhiloxUniformOpenZero(a)));
  float s, c;
  sincospif(2.0f * u, &s, &c);
#else
  float r = std::sqrt(-2.0f * std::log(PhiloxUniformOpenZero(a)));
  const double kTwoPi = 6.283185307179586476925286766559;
  float s = static_cast<float>(std::sin(kTwoPi * u));
  float c = static_cast<float>(std::cos(kTwoPi * u));
#endif
  *z0 = r * c;
  *z1 = r * s;
}

// CPU reference for a draw of n values starting at device offset `offset`.
inline std::vector<float> PhiloxUniformReference(uint64_t seed, uint64_t offset, int64_t n) {
  std::vector<float> out(n > 0 ? static_cast<size_t>(n) : 0);
  for (int64_t i = 0; i < n; ++i) {
    PhiloxBlock b = PhiloxStreamBlock(seed, offset + static_cast<uint64_t>(i / 4));
    out[i] = PhiloxUniform(b.v[i % 4]);
  }
  return out;
}

inline std::vector<float> PhiloxNormalReference(uint64_t seed, uint64_t offset, int64_t n) {
  std::vector<float> out(n > 0 ? static_cast<size_t>(n) : 0);
  for (int64_t i = 0; i < n; i += 2) {
    PhiloxBlock b = PhiloxStreamBlock(seed, offset + static_cast<uint64_t>(i / 4));
    int w = static_cast<int>(i % 4);
    float z0, z1;
    PhiloxBoxMuller(b.v[w], b.v[w + 1], &z0, &z1);
    out[i] = z0;
    if (i + 1 < n) out[i + 1] = z1;
  }
  return out;
}

}  // namespace encore::shims

#endif  // ENCORE_SHIMS_INTERNAL_PHILOX_REFERENCE_H_
