// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/cuda_api.h"
#include "encore/graph/verify/internal/block_map.h"
#include "encore/graph/verify/internal/checksum_hash.h"
#include "encore/graph/verify/internal/checksum_kernels.h"

namespace encore::checksum {
namespace {

constexpr int kThreads = 256;
// Independent 16-byte loads in flight per thread: with a few CTAs per SM
// this keeps enough bytes in flight to cover HBM latency.
constexpr int kUnroll = 4;
constexpr int kListThreads = 1024;

struct BlockSpan {
  const unsigned char* data;
  uint32_t bytes;
};

// The last region starting at or before `block` holds it (an empty region
// shares its first block with the next one); BlockMap::Locate on the host.
__device__ BlockSpan FindBlock(const ChecksumParams& p, int64_t block) {
  int lo = 0;
  int hi = p.num_regions - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.regions[mid].first_block <= block) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const DeviceRegion r = p.regions[lo];
  const uint64_t offset = static_cast<uint64_t>(block - r.first_block) * kChecksumBlockBytes;
  const uint64_t left = r.bytes - offset;
  return {r.data + offset, static_cast<uint32_t>(left < kChecksumBlockBytes ? left : kChecksumBlockBytes)};
}

__device__ __forceinline__ uint64_t Join(uint32_t lo, uint32_t hi) { return lo | static_cast<uint64_t>(hi) << 32; }

__device__ __forceinline__ uint64_t PairHash(uint4 v, uint32_t pair) {
  return WordHash(Join(v.x, v.y), 2 * pair) + WordHash(Join(v.z, v.w), 2 * pair + 1);
}

// Word i from single bytes, never past byte n: the edges of a block whose
// base is not 4-byte aligned, and the zero-padded last word.
__device__ uint64_t ByteWord(const unsigned char* p, uint32_t n, uint32_t i) {
  uint64_t w = 0;
  const uint32_t end = min(n, 8 * i + 8);
  for (uint32_t b = 8 * i; b < end; ++b) w |= static_cast<uint64_t>(p[b]) << (8 * (b - 8 * i));
  return w;
}

// Complete words [wb, fe) of a 16-byte aligned block (wb even).
__device__ uint64_t Sum16(const unsigned char* p, uint32_t wb, uint32_t fe) {
  const uint4* v = reinterpret_cast<const uint4*>(p);
  const uint32_t pairs_end = fe / 2;
  uint64_t s = 0;
  uint32_t j = wb / 2 + threadIdx.x;
  for (; j + (kUnroll - 1) * kThreads < pairs_end; j += kUnroll * kThreads) {
    uint4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = __ldcs(v + j + u * kThreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s += PairHash(x[u], j + u * kThreads);
  }
  for (; j < pairs_end; j += kThreads) s += PairHash(__ldcs(v + j), j);
  if ((fe & 1) != 0 && fe > wb && threadIdx.x == 0) {
    s += WordHash(__ldcs(reinterpret_cast<const unsigned long long*>(p) + fe - 1), fe - 1);
  }
  return s;
}

// Complete words [wb, fe) of an 8-byte aligned block.
__device__ uint64_t Sum8(const unsigned char* p, uint32_t wb, uint32_t fe) {
  const unsigned long long* v = reinterpret_cast<const unsigned long long*>(p);
  uint64_t s = 0;
  uint32_t i = wb + threadIdx.x;
  for (; i + (kUnroll - 1) * kThreads < fe; i += kUnroll * kThreads) {
    unsigned long long x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = __ldcs(v + i + u * kThreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s += WordHash(x[u], i + u * kThreads);
  }
  for (; i < fe; i += kThreads) s += WordHash(__ldcs(v + i), i);
  return s;
}

// Complete words [wb, fe) of a 4-byte aligned block.
__device__ uint64_t Sum4(const unsigned char* p, uint32_t wb, uint32_t fe) {
  const unsigned int* v = reinterpret_cast<const unsigned int*>(p);
  uint64_t s = 0;
  for (uint32_t i = wb + threadIdx.x; i < fe; i += kThreads) {
    s += WordHash(Join(__ldcs(v + 2 * i), __ldcs(v + 2 * i + 1)), i);
  }
  return s;
}

// Complete words [wb, fe) of a block whose base is `a` (1 to 3) bytes past a
// 4-byte boundary: aligned 4-byte loads shifted into place, for words whose
// three loads stay inside the block; single bytes for the others.
__device__ uint64_t SumUnaligned(const unsigned char* p, uint32_t n, uint32_t wb, uint32_t fe, uint32_t a) {
  const unsigned int* q = reinterpret_cast<const unsigned int*>(p - a);
  const uint32_t shift = 8 * a;
  // Word i's loads span bytes [8i - a, 8i + 12 - a) of the block.
  const uint32_t last_inner = n + a >= 12 ? (n + a - 12) / 8 : 0;
  uint64_t s = 0;
  for (uint32_t i = wb + threadIdx.x; i < fe; i += kThreads) {
    uint64_t w;
    if (i >= 1 && i <= last_inner) {
      const unsigned int x0 = __ldcs(q + 2 * i);
      const unsigned int x1 = __ldcs(q + 2 * i + 1);
      const unsigned int x2 = __ldcs(q + 2 * i + 2);
      w = Join(__funnelshift_r(x0, x1, shift), __funnelshift_r(x1, x2, shift));
    } else {
      w = ByteWord(p, n, i);
    }
    s += WordHash(w, i);
  }
  return s;
}

// This thread's share of words [wb, we) of the n bytes at p.
__device__ uint64_t SumPart(const unsigned char* p, uint32_t n, uint32_t wb, uint32_t we) {
  const uint32_t full = n / 8;
  const uint32_t fe = min(we, full);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  uint64_t s;
  if ((addr & 15) == 0) {
    s = Sum16(p, wb, fe);
  } else if ((addr & 7) == 0) {
    s = Sum8(p, wb, fe);
  } else if ((addr & 3) == 0) {
    s = Sum4(p, wb, fe);
  } else {
    s = SumUnaligned(p, n, wb, fe, static_cast<uint32_t>(addr & 3));
  }
  if (wb <= full && full < we && threadIdx.x == 0) s += WordHash(ByteWord(p, n, full), full);
  return s;
}

// The CTA's sum, in thread 0.
__device__ unsigned long long BlockSum(unsigned long long v) {
  __shared__ unsigned long long warp_sums[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = 0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kThreads / 32; ++w) v += warp_sums[w];
  }
  return v;
}

__device__ __forceinline__ bool Skipped(const uint32_t* skip, int64_t block) {
  return skip != nullptr && ((skip[block >> 5] >> (block & 31)) & 1u) != 0;
}

__device__ void RecordDifference(DeviceVerdict* v, int64_t block) {
  atomicAdd(&v->work_count, 1ull);
  atomicMax(&v->work_first_inv, ~static_cast<unsigned long long>(block));
}

// Thread 0 of every CTA, once the CTA's differences are recorded and
// fenced: the last CTA of the launch publishes and clears the working fields.
__device__ void ArriveAndPublish(DeviceVerdict* v) {
  __threadfence();
  if (atomicAdd(&v->ticket, 1u) == gridDim.x - 1) {
    v->count = atomicExch(&v->work_count, 0ull);
    v->first_inv = atomicExch(&v->work_first_inv, 0ull);
    v->ticket = 0;
    __threadfence();
  }
}

// Thread 0: adds this part's sum to its block's; the block's last part
// stores the checksum and compares it.
__device__ void FinishPart(const ChecksumParams& p, int64_t block, unsigned long long sum) {
  bool last = true;
  if (p.parts > 1) {
    atomicAdd(&p.partial[block], sum);
    __threadfence();
    last = atomicAdd(&p.arrivals[block], 1u) == static_cast<unsigned int>(p.parts - 1);
    if (last) {
      sum = atomicExch(&p.partial[block], 0ull);
      p.arrivals[block] = 0;
    }
  }
  if (last) {
    p.out[block] = sum;
    if (p.ref != nullptr && sum != p.ref[block] && !Skipped(p.skip, block)) RecordDifference(p.verdict, block);
  }
  if (p.ref != nullptr) ArriveAndPublish(p.verdict);
}

__global__ void __launch_bounds__(kThreads) BlockChecksumKernel(ChecksumParams p) {
  __shared__ BlockSpan span;
  const int64_t block = blockIdx.x / p.parts;
  const uint32_t part = blockIdx.x % p.parts;
  if (threadIdx.x == 0) span = FindBlock(p, block);
  __syncthreads();
  // Parts start on even words: 16-byte boundaries for the vector loads.
  const uint32_t words = (span.bytes + 7) / 8;
  const uint32_t per = ((words + p.parts - 1) / p.parts + 1) & ~1u;
  const uint32_t wb = min(words, part * per);
  const uint32_t we = min(words, wb + per);
  const unsigned long long sum = BlockSum(SumPart(span.data, span.bytes, wb, we));
  if (threadIdx.x == 0) FinishPart(p, block, sum);
}

__global__ void __launch_bounds__(kThreads)
    CompareSlotsKernel(const uint64_t* a, const uint64_t* b, const uint32_t* skip, int64_t n, DeviceVerdict* v) {
  const int64_t block = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (block < n && a[block] != b[block] && !Skipped(skip, block)) RecordDifference(v, block);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) ArriveAndPublish(v);
}

__global__ void __launch_bounds__(kListThreads)
    ListChangedKernel(const uint64_t* a, const uint64_t* b, int64_t n, int64_t* list, uint64_t capacity,
                      unsigned long long* count) {
  __shared__ unsigned int warp_counts[kListThreads / 32];
  __shared__ unsigned long long base;
  if (threadIdx.x == 0) base = 0;
  __syncthreads();
  const unsigned int lane = threadIdx.x & 31;
  const unsigned int warp = threadIdx.x / 32;
  for (int64_t start = 0; start < n; start += kListThreads) {
    const int64_t block = start + threadIdx.x;
    const bool changed = block < n && a[block] != b[block];
    const unsigned int ballot = __ballot_sync(0xffffffffu, changed);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    unsigned int before = 0;
    unsigned int total = 0;
    for (unsigned int w = 0; w < kListThreads / 32; ++w) {
      before += w < warp ? warp_counts[w] : 0;
      total += warp_counts[w];
    }
    const unsigned long long pos = base + before + __popc(ballot & ((1u << lane) - 1));
    if (changed && pos < capacity) list[pos] = block;
    __syncthreads();  // every thread has read base and warp_counts
    if (threadIdx.x == 0) base += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) *count = base;
}

__global__ void SetMaskBitsKernel(const int64_t* blocks, uint64_t n, uint32_t* mask) {
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const int64_t b = blocks[i];
    atomicOr(&mask[b >> 5], 1u << (b & 31));
  }
}

unsigned int GridFor(uint64_t n, unsigned int threads) {
  return static_cast<unsigned int>((n + threads - 1) / threads);
}

}  // namespace

cudaError_t LaunchBlockChecksums(const ChecksumParams& params, int64_t num_blocks, cudaStream_t stream) {
  const unsigned int grid = static_cast<unsigned int>(num_blocks * params.parts);
  BlockChecksumKernel<<<grid, kThreads, 0, stream>>>(params);
  return ::encore::cuda().GetLastError();
}

cudaError_t LaunchCompareSlots(const uint64_t* a, const uint64_t* b, const uint32_t* skip, int64_t num_blocks,
                               DeviceVerdict* verdict, cudaStream_t stream) {
  CompareSlotsKernel<<<GridFor(num_blocks, kThreads), kThreads, 0, stream>>>(a, b, skip, num_blocks, verdict);
  return ::encore::cuda().GetLastError();
}

cudaError_t LaunchListChanged(const uint64_t* a, const uint64_t* b, int64_t num_blocks, int64_t* list,
                              uint64_t capacity, unsigned long long* count, cudaStream_t stream) {
  ListChangedKernel<<<1, kListThreads, 0, stream>>>(a, b, num_blocks, list, capacity, count);
  return ::encore::cuda().GetLastError();
}

cudaError_t LaunchSetMaskBits(const int64_t* blocks, uint64_t n, uint32_t* mask, cudaStream_t stream) {
  SetMaskBitsKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(blocks, n, mask);
  return ::encore::cuda().GetLastError();
}

}  // namespace encore::checksum
