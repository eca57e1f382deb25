// SPDX-License-Identifier: Apache-2.0
// What the graph/verify GPU tests share: random bytes, single-byte pokes of
// device memory, and a region's host reference checksums.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_VERIFY_TEST_UTIL_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_VERIFY_TEST_UTIL_H_

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/graph/verify/internal/block_map.h"

namespace encore::testing {

inline std::vector<std::byte> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng();
    for (size_t k = 0; k < 8 && i + k < n; ++k) v[i + k] = static_cast<std::byte>(r >> (8 * k));
  }
  return v;
}

// Synchronous copies that wait for the whole device (tests' streams are
// non-blocking, so the legacy stream does not order them).
inline cudaError_t ToDevice(void* dst, const void* src, size_t n) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice);
  return e == cudaSuccess ? cudaDeviceSynchronize() : e;
}
inline cudaError_t ToHost(void* dst, const void* src, size_t n) {
  cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) : e;
}

inline uint8_t ReadByte(const void* device) {
  uint8_t v = 0;
  EXPECT_EQ(ToHost(&v, device, 1), cudaSuccess);
  return v;
}
inline void WriteByte(void* device, uint8_t v) { EXPECT_EQ(ToDevice(device, &v, 1), cudaSuccess); }
inline void FlipBit(void* device, int bit) { WriteByte(device, ReadByte(device) ^ static_cast<uint8_t>(1u << bit)); }

// Free device memory, or 0 when it cannot be read.
inline size_t FreeDeviceBytes() {
  size_t free = 0, total = 0;
  return cudaMemGetInfo(&free, &total) == cudaSuccess ? free : 0;
}

}  // namespace encore::testing

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_VERIFY_TEST_UTIL_H_
