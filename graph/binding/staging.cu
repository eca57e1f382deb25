// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/binding/internal/staging.h"

#include <algorithm>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

constexpr int kThreads = 256;

__device__ uint64_t RowsBytes(RowGeometry g, uint64_t b, uint64_t total) {
  const uint64_t bytes = b == 0 || g.row == 0 ? 0 : (b - 1) * g.stride + g.row;
  return bytes < total ? bytes : total;
}

// Padded rows of a bucket: [dst, dst + n) set to 0.
__device__ void ZeroBytes(char* dst, uint64_t n, uint64_t tid, uint64_t stride) {
  if (((reinterpret_cast<uintptr_t>(dst) | n) & 15) == 0) {
    uint4* d4 = reinterpret_cast<uint4*>(dst);
    for (uint64_t i = tid; i < n / 16; i += stride) d4[i] = make_uint4(0, 0, 0, 0);
  } else {
    for (uint64_t i = tid; i < n; i += stride) dst[i] = 0;
  }
}

__global__ void StageKernel(StagingParams p) {
  const bool first_block = blockIdx.x == 0 && blockIdx.y == 0;
  // A padded head: this launch's b, from the slot its number names.
  __shared__ uint64_t launch, batch;
  if (p.pad.rows && !p.is_tail) {
    if (threadIdx.x == 0) {
      const volatile PadRowsShared* r = p.pad.rows;
      launch = r->launches;
      batch = r->rows[launch % PadRowsShared::kSlots];
    }
    __syncthreads();
  }
  if (!p.is_tail && first_block) {
    if (p.sequence && threadIdx.x == 0) *p.sequence += 1;
    if (threadIdx.x < p.publish_count) {
      p.table[p.table_base + threadIdx.x] = p.publish[threadIdx.x];
      if (p.pad.rows) p.pad.bytes_table[p.table_base + threadIdx.x] = RowsBytes(p.pad.out_rows[threadIdx.x], batch, ~0ull);
    }
    if (p.pad.rows && threadIdx.x == 0) *p.pad.launch_slot = launch;
  }
  if (p.is_tail && p.pad.advance && first_block && threadIdx.x == 0) {
    // The next launch's heads read the next slot; the host sees how far
    // the device got.
    volatile PadRowsShared* r = p.pad.rows;
    r->launches = *p.pad.launch_slot + 1;
    __threadfence_system();
  }
  const int c = blockIdx.y;
  if (c >= p.count) return;
  const char* src = static_cast<const char*>(p.copies[c].src);
  // A tail reads where to write from the table its launch's head filled in.
  char* dst = static_cast<char*>(p.is_tail ? p.table[p.table_base + c] : p.copies[c].dst);
  const uint64_t total = p.copies[c].bytes;
  uint64_t bytes = total;
  if (p.pad.rows) bytes = p.is_tail ? p.pad.bytes_table[p.table_base + c] : RowsBytes(p.pad.in_rows[c], batch, total);
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  if (p.pad.rows && !p.is_tail && bytes < total) ZeroBytes(dst + bytes, total - bytes, tid, stride);
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

cudaError_t LaunchStaging(const StagingParams& params, uint64_t max_bytes, cudaStream_t stream) {
  // One 16-byte word per thread, up to a grid that covers an H200 a few times.
  uint64_t words = (max_bytes + 15) / 16;
  unsigned blocks = static_cast<unsigned>(std::clamp<uint64_t>((words + kThreads - 1) / kThreads, 1, 1024));
  dim3 grid(blocks, static_cast<unsigned>(std::max(params.count, 1)));
  StageKernel<<<grid, kThreads, 0, stream>>>(params);
  return ::encore::cuda().GetLastError();  // through the fault seam
}

}  // namespace encore
