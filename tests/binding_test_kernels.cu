// SPDX-License-Identifier: Apache-2.0
#include "encore/tests/binding_test_kernels.h"

#include <cub/device/device_reduce.cuh>

namespace encore::testing {
namespace {

__global__ void StructAffineKernel(AffineArgs a) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < a.n) a.out[i] = a.in[i] * a.a;
}

// High half first: in little-endian order the pair (lo, hi) would make one
// 8-byte word that holds the pointer, which the scan finds.
__global__ void AddFromHalvesKernel(uint32_t hi, uint32_t lo, float* out, int64_t n) {
  const float* in = reinterpret_cast<const float*>((uint64_t(hi) << 32) | lo);
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] += in[i];
}

__global__ void CopyToHalvesKernel(const float* in, uint32_t hi, uint32_t lo, int64_t n) {
  float* out = reinterpret_cast<float*>((uint64_t(hi) << 32) | lo);
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void ShiftRightKernel(const float* in, float* out, int64_t n) {
  // One thread, in ascending order, so an in-place call reads what it has
  // just written.
  for (int64_t i = 0; i < n; ++i) out[i] = i == 0 ? 0.0f : in[i - 1];
}

// Waits `ns` nanoseconds by the GPU's global timer, then copies.
__global__ void SlowCopyKernel(const float* in, float* out, int64_t n, uint64_t ns) {
  uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i];
}

int Blocks(int64_t n) { return static_cast<int>((n + 255) / 256); }

}  // namespace

cudaError_t LaunchSlowCopy(const float* in, float* out, int64_t n, uint64_t ns, cudaStream_t s) {
  SlowCopyKernel<<<Blocks(n), 256, 0, s>>>(in, out, n, ns);
  return cudaGetLastError();
}

cudaError_t LaunchStructAffine(AffineArgs args, cudaStream_t s) {
  StructAffineKernel<<<Blocks(args.n), 256, 0, s>>>(args);
  return cudaGetLastError();
}

cudaError_t LaunchAddFromHalves(const float* in, float* out, int64_t n, cudaStream_t s) {
  const uint64_t p = reinterpret_cast<uint64_t>(in);
  AddFromHalvesKernel<<<Blocks(n), 256, 0, s>>>(static_cast<uint32_t>(p >> 32), static_cast<uint32_t>(p), out, n);
  return cudaGetLastError();
}

cudaError_t LaunchCopyToHalves(const float* in, float* out, int64_t n, cudaStream_t s) {
  const uint64_t p = reinterpret_cast<uint64_t>(out);
  CopyToHalvesKernel<<<Blocks(n), 256, 0, s>>>(in, static_cast<uint32_t>(p >> 32), static_cast<uint32_t>(p), n);
  return cudaGetLastError();
}

cudaError_t LaunchShiftRight(const float* in, float* out, int64_t n, cudaStream_t s) {
  ShiftRightKernel<<<1, 1, 0, s>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t CubSum(const float* in, float* out, int64_t n, void* temp, size_t* temp_bytes, cudaStream_t s) {
  return cub::DeviceReduce::Sum(temp, *temp_bytes, in, out, static_cast<int>(n), s);
}

namespace {
__global__ void DoubleOnlyHere(const float* in, float* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
}  // namespace

cudaError_t LaunchDoubleOnlyHere(const float* in, float* out, int64_t n, cudaStream_t s) {
  DoubleOnlyHere<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(in, out, n);
  return cudaGetLastError();
}

}  // namespace encore::testing
