// SPDX-License-Identifier: Apache-2.0
// The block checksum shared by the device kernels (checksum_kernels.cu) and
// a host reference that tests compare them against.
//
// A block of n bytes is read as ceil(n / 8) little-endian 64-bit words, the
// last one zero-padded; word w at index i adds Mix64(w ^ ((i + 1) * kWordKey)) to
// a wrapping 64-bit sum. Mix64 is a bijection (xor-shifts and odd
// multiplies), so changing any one word, a single flipped bit included,
// always changes the sum; the index key makes swapped words change it (with
// probability 1 - 2^-64 per swap). The sum is order-independent, so a
// parallel reduction gives the same value whatever the thread layout.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_CHECKSUM_HASH_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_CHECKSUM_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define ENCORE_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ENCORE_HOST_DEVICE inline
#endif

namespace encore::checksum {

inline constexpr uint64_t kWordKey = 0x9E3779B97F4A7C15ull;
inline constexpr uint64_t kMixMultiplier = 0xD6E8FEB86659FD93ull;

// Shifts by 32 cost one 32-bit xor on the GPU, where 64-bit multiplies are
// already three instructions each: the hash must not be what bounds a pass
// that should run at memory bandwidth.
ENCORE_HOST_DEVICE uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 32)) * kMixMultiplier;
  z = (z ^ (z >> 32)) * kMixMultiplier;
  return z ^ (z >> 32);
}

// index + 1: Mix64(0) is 0, and a zero word at index 0 should still count.
ENCORE_HOST_DEVICE uint64_t WordHash(uint64_t word, uint32_t index) {
  return Mix64(word ^ ((static_cast<uint64_t>(index) + 1) * kWordKey));
}

// Host reference: the checksum of the `n` bytes at `p` (n <= 1 MiB).
inline uint64_t HostBlockChecksum(const std::byte* p, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i * 8 < n; ++i) {
    uint64_t w = 0;
    const size_t len = n - i * 8 < 8 ? n - i * 8 : 8;
    std::memcpy(&w, p + i * 8, len);  // little-endian hosts, as CUDA's are
    sum += WordHash(w, static_cast<uint32_t>(i));
  }
  return sum;
}

}  // namespace encore::checksum

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_CHECKSUM_HASH_H_
