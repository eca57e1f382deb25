// SPDX-License-Identifier: Apache-2.0
#include "encore/bench/micro_kernels.h"

namespace encore::bench {
namespace {

__global__ void SmallCopy(const char* src, char* dst, uint64_t bytes) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x) dst[i] = src[i];
}
__global__ void Bump(unsigned long long* counter) { ++*counter; }

__global__ void AddOne(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}

__global__ void StateStep(const float* in, const float* w, float* state, size_t chunk, float* out, int n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < chunk; i += stride) {
    state[i] = state[i] * 0.5f + w[i % 16384] + in[i % n];
    if (i < static_cast<size_t>(n)) out[i] = in[i] + w[i];
  }
}

}  // namespace

cudaError_t LaunchStateStep(const float* in, const float* w, float* state, size_t chunk, float* out, int n,
                            cudaStream_t s) {
  StateStep<<<64, 256, 0, s>>>(in, w, state, chunk, out, n);
  return cudaGetLastError();
}

cudaError_t LaunchSmallCopy(const void* src, void* dst, uint64_t bytes, cudaStream_t s) {
  SmallCopy<<<1, 256, 0, s>>>(static_cast<const char*>(src), static_cast<char*>(dst), bytes);
  return cudaGetLastError();
}
cudaError_t LaunchAddOne(const float* in, float* out, int n, cudaStream_t s) {
  AddOne<<<(n + 255) / 256, 256, 0, s>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t LaunchAddOneChain(const float* in, float* out, int n, int k, cudaStream_t s) {
  cudaError_t e = LaunchAddOne(in, out, n, s);
  for (int i = 1; i < k && e == cudaSuccess; ++i) e = LaunchAddOne(out, out, n, s);
  return e;
}

const void* BumpKernel() { return reinterpret_cast<const void*>(&Bump); }

cudaError_t LaunchBump(unsigned long long* counter, cudaStream_t s) {
  Bump<<<1, 1, 0, s>>>(counter);
  return cudaGetLastError();
}

}  // namespace encore::bench
