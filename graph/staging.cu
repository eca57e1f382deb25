#include "encore/graph/staging.h"

#include <algorithm>

#include "encore/core/cuda_api.h"

namespace encore {
namespace {

constexpr int kThreads = 256;

// Padded rows of a bucket: [dst, dst + n) set to 0.
__device__ void ZeroBytes(char* dst, uint64_t n, uint64_t tid, uint64_t stride) {
  if (((reinterpret_cast<uintptr_t>(dst) | n) & 15) == 0) {
    uint4* d4 = reinterpret_cast<uint4*>(dst);
    for (uint64_t i = tid; i < n / 16; i += stride) d4[i] = make_uint4(0, 0, 0, 0);
  } else {
    for (uint64_t i = tid; i < n; i += stride) dst[i] = 0;
  }
}

__global__ void StageKernel(StageParams p) {
  const bool first_block = blockIdx.x == 0 && blockIdx.y == 0;
  if (!p.is_tail && first_block) {
    if (p.sequence && threadIdx.x == 0) *p.sequence += 1;
    if (threadIdx.x < p.publish_count) {
      p.table[p.table_base + threadIdx.x] = p.publish[threadIdx.x];
      if (p.bytes_table) p.bytes_table[p.table_base + threadIdx.x] = p.publish_bytes[threadIdx.x];
    }
  }
  const int c = blockIdx.y;
  if (c >= p.count) return;
  const char* src = static_cast<const char*>(p.copies[c].src);
  // A tail reads where to write from the table its launch's head filled in.
  char* dst = static_cast<char*>(p.is_tail ? p.table[p.table_base + c] : p.copies[c].dst);
  const uint64_t bytes = p.is_tail && p.bytes_table ? p.bytes_table[p.table_base + c] : p.copies[c].bytes;
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  if (!p.is_tail && p.copies[c].zero > 0) ZeroBytes(dst + bytes, p.copies[c].zero, tid, stride);
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15) == 0) {
    const uint64_t n16 = bytes / 16;
    const uint4* s4 = reinterpret_cast<const uint4*>(src);
    uint4* d4 = reinterpret_cast<uint4*>(dst);
    for (uint64_t i = tid; i < n16; i += stride) d4[i] = s4[i];
    for (uint64_t i = n16 * 16 + tid; i < bytes; i += stride) dst[i] = src[i];
  } else {
    for (uint64_t i = tid; i < bytes; i += stride) dst[i] = src[i];
  }
}

}  // namespace

cudaError_t LaunchStage(const StageParams& params, uint64_t max_bytes, cudaStream_t stream) {
  // One 16-byte word per thread, up to a grid that covers an H200 a few times.
  uint64_t words = (max_bytes + 15) / 16;
  unsigned blocks = static_cast<unsigned>(std::clamp<uint64_t>((words + kThreads - 1) / kThreads, 1, 1024));
  dim3 grid(blocks, static_cast<unsigned>(std::max(params.count, 1)));
  StageKernel<<<grid, kThreads, 0, stream>>>(params);
  return ::encore::cuda().GetLastError();  // through the fault seam
}

}  // namespace encore
