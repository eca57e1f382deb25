// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "encore/core/internal/cuda_api.h"
#include "encore/graph/capture/internal/outside_work_kernel.h"

namespace encore {
namespace {

__global__ void CountBytesNot(const unsigned char* data, size_t bytes, unsigned char value,
                              unsigned long long* count) {
  unsigned long long n = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    n += data[i] != value;
  }
  if (n != 0) atomicAdd(count, n);
}

}  // namespace

cudaError_t LaunchCountBytesNot(const void* data, size_t bytes, unsigned char value, unsigned long long* count,
                                cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(std::clamp<size_t>((bytes + kThreads - 1) / kThreads, 1, 1024));
  CountBytesNot<<<blocks, kThreads, 0, stream>>>(static_cast<const unsigned char*>(data), bytes, value, count);
  return ::encore::cuda().GetLastError();
}

}  // namespace encore
