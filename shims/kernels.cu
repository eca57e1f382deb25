// SPDX-License-Identifier: Apache-2.0
#include "encore/shims/internal/kernels.h"

#include "encore/core/internal/cuda_api.h"

#include "encore/shims/internal/philox_reference.h"

namespace encore::shims::internal {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H200 several times over; larger inputs loop.
constexpr int64_t kMaxBlocks = 1024;

int Blocks(int64_t work) {
  int64_t b = (work + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

__device__ int64_t FirstIndex() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Bytes, not bool: a mask filled by other code may hold any nonzero byte.
__global__ void CountNonzeroKernel(const unsigned char* mask, int64_t n, unsigned long long* count) {
  unsigned long long local = 0;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) local += mask[i] != 0;
  for (int d = 16; d > 0; d /= 2) local += __shfl_down_sync(0xffffffffu, local, d);
  __shared__ unsigned long long warp_sums[kThreads / 32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = local;
  __syncthreads();
  if (warp == 0) {
    unsigned long long v = lane < kThreads / 32 ? warp_sums[lane] : 0;
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
    if (lane == 0 && v != 0) atomicAdd(count, v);
  }
}

template <typename T>
__global__ void MaskedSelectKernel(T* out, const unsigned char* mask, const T* src, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    if (mask[i] != 0) out[i] = src[i];
  }
}

template <typename T>
cudaError_t LaunchSelect(void* out, const bool* mask, const void* src, int64_t n, cudaStream_t stream) {
  MaskedSelectKernel<T><<<Blocks(n), kThreads, 0, stream>>>(
      static_cast<T*>(out), reinterpret_cast<const unsigned char*>(mask), static_cast<const T*>(src), n);
  return ::encore::cuda().GetLastError();  // through the fault seam
}

// One thread per 4-wide counter. Thread 0 of each block reads seed and
// offset; the last block to finish (atomic ticket) writes the new offset, so
// the write is ordered after every block's read within this one launch.
template <bool kNormal>
__global__ void PhiloxKernel(PhiloxState* state, float* out, int64_t n) {
  __shared__ unsigned long long s_seed;
  __shared__ unsigned long long s_offset;
  volatile PhiloxState* vs = state;
  if (threadIdx.x == 0) {
    s_seed = vs->seed;
    s_offset = vs->offset;
  }
  __syncthreads();
  const unsigned long long seed = s_seed;
  const unsigned long long offset = s_offset;
  const int64_t counters = (n + 3) / 4;
  const bool vector_store = (reinterpret_cast<uintptr_t>(out) % 16) == 0;
  for (int64_t c = FirstIndex(); c < counters; c += GridStride()) {
    PhiloxBlock b = PhiloxStreamBlock(seed, offset + static_cast<unsigned long long>(c));
    float v[4];
    if constexpr (kNormal) {
      PhiloxBoxMuller(b.v[0], b.v[1], &v[0], &v[1]);
      PhiloxBoxMuller(b.v[2], b.v[3], &v[2], &v[3]);
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = PhiloxUniform(b.v[k]);
    }
    const int64_t base = c * 4;
    if (vector_store && base + 4 <= n) {
      *reinterpret_cast<float4*>(out + base) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      for (int k = 0; k < 4 && base + k < n; ++k) out[base + k] = v[k];
    }
  }
  if (threadIdx.x == 0) {
    __threadfence();
    unsigned int done = atomicAdd(&state->ticket, 1u);
    if (done == gridDim.x - 1) {
      __threadfence();
      vs->offset = offset + static_cast<unsigned long long>(counters);
      vs->ticket = 0;
    }
  }
}

template <bool kNormal>
cudaError_t LaunchPhilox(PhiloxState* state, float* out, int64_t n, cudaStream_t stream) {
  PhiloxKernel<kNormal><<<Blocks((n + 3) / 4), kThreads, 0, stream>>>(state, out, n);
  return ::encore::cuda().GetLastError();  // through the fault seam
}

}  // namespace

cudaError_t LaunchCountNonzero(const bool* mask, int64_t n, unsigned long long* count, cudaStream_t stream) {
  CountNonzeroKernel<<<Blocks(n), kThreads, 0, stream>>>(reinterpret_cast<const unsigned char*>(mask), n, count);
  return ::encore::cuda().GetLastError();  // through the fault seam
}

cudaError_t LaunchMaskedSelect(void* out, const bool* mask, const void* src, int64_t n, size_t elem_size,
                               cudaStream_t stream) {
  switch (elem_size) {
    case 1: return LaunchSelect<uint8_t>(out, mask, src, n, stream);
    case 2: return LaunchSelect<uint16_t>(out, mask, src, n, stream);
    case 4: return LaunchSelect<uint32_t>(out, mask, src, n, stream);
    case 8: return LaunchSelect<uint64_t>(out, mask, src, n, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchPhiloxUniform(PhiloxState* state, float* out, int64_t n, cudaStream_t stream) {
  return LaunchPhilox<false>(state, out, n, stream);
}

cudaError_t LaunchPhiloxNormal(PhiloxState* state, float* out, int64_t n, cudaStream_t stream) {
  return LaunchPhilox<true>(state, out, n, stream);
}

}  // namespace encore::shims::internal
