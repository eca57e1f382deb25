// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/cuda_api.h"
#include "encore/graph/verify/internal/block_map.h"
#include "encore/graph/verify/internal/snapshot_kernels.h"

namespace encore::snapshot {
namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNone = ~0ull;

__device__ __forceinline__ bool Same(uint4 a, uint4 b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }
__device__ __forceinline__ bool Same(uint2 a, uint2 b) { return a.x == b.x && a.y == b.y; }
__device__ __forceinline__ bool Same(unsigned int a, unsigned int b) { return a == b; }
__device__ __forceinline__ bool Same(unsigned char a, unsigned char b) { return a == b; }

// n bytes from src to dst in units of U (both U-aligned), the rest bytewise.
template <class U>
__device__ void CopyRange(unsigned char* dst, const unsigned char* src, uint64_t n) {
  const uint64_t units = n / sizeof(U);
  U* d = reinterpret_cast<U*>(dst);
  const U* s = reinterpret_cast<const U*>(src);
  for (uint64_t i = threadIdx.x; i < units; i += kThreads) d[i] = s[i];
  for (uint64_t i = units * sizeof(U) + threadIdx.x; i < n; i += kThreads) dst[i] = src[i];
}

// The first offset in [0, n) this thread finds where a and b differ (its
// offsets ascend, so that is its smallest), or kNone.
template <class U>
__device__ unsigned long long FirstDifferingByte(const unsigned char* a, const unsigned char* b, uint64_t n) {
  const uint64_t units = n / sizeof(U);
  const U* ua = reinterpret_cast<const U*>(a);
  const U* ub = reinterpret_cast<const U*>(b);
  for (uint64_t i = threadIdx.x; i < units; i += kThreads) {
    if (Same(ua[i], ub[i])) continue;
    for (uint64_t k = i * sizeof(U);; ++k) {
      if (a[k] != b[k]) return k;
    }
  }
  for (uint64_t i = units * sizeof(U) + threadIdx.x; i < n; i += kThreads) {
    if (a[i] != b[i]) return i;
  }
  return kNone;
}

// The widest unit both addresses are aligned to (the buffer side always is
// to 16 bytes, so this is the region's alignment).
__device__ int UnitBytes(const void* a, const void* b) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  return (x & 15) == 0 ? 16 : (x & 7) == 0 ? 8 : (x & 3) == 0 ? 4 : 1;
}

__device__ void Copy(unsigned char* dst, const unsigned char* src, uint64_t n) {
  switch (UnitBytes(dst, src)) {
    case 16:
      return CopyRange<uint4>(dst, src, n);
    case 8:
      return CopyRange<uint2>(dst, src, n);
    case 4:
      return CopyRange<unsigned int>(dst, src, n);
    default:
      return CopyRange<unsigned char>(dst, src, n);
  }
}

__device__ unsigned long long Compare(const unsigned char* a, const unsigned char* b, uint64_t n) {
  switch (UnitBytes(a, b)) {
    case 16:
      return FirstDifferingByte<uint4>(a, b, n);
    case 8:
      return FirstDifferingByte<uint2>(a, b, n);
    case 4:
      return FirstDifferingByte<unsigned int>(a, b, n);
    default:
      return FirstDifferingByte<unsigned char>(a, b, n);
  }
}

// Thread 0 of every CTA once the CTA's finds are recorded and fenced: the
// last CTA publishes the first difference with both bytes.
__device__ void ArriveAndPublish(const Params& p) {
  DeviceDifference* d = p.difference;
  __threadfence();
  if (atomicAdd(&d->ticket, 1u) != gridDim.x - 1) return;
  const unsigned long long inv = atomicExch(&d->work_first_inv, 0ull);
  d->first_inv = inv;
  if (inv != 0) {
    const unsigned long long key = ~inv;
    const Entry e = p.entries[key / kChecksumBlockBytes];
    const uint64_t offset = key % kChecksumBlockBytes;
    d->saved = p.buffer[e.buffer_offset + offset];
    d->current = e.region[offset];
  }
  d->ticket = 0;
  __threadfence();
}

__global__ void __launch_bounds__(kThreads) SnapshotKernel(Params p) {
  const int64_t j = blockIdx.x / p.parts;
  const uint64_t part = blockIdx.x % p.parts;
  const Entry e = p.entries[j];
  // Parts start on 16-byte boundaries, so each keeps the block's alignment.
  const uint64_t per = ((e.bytes + p.parts - 1) / p.parts + 15) & ~15ull;
  const uint64_t begin = min(e.bytes, part * per);
  const uint64_t n = min(e.bytes, begin + per) - begin;
  unsigned char* saved = p.buffer + e.buffer_offset + begin;
  unsigned char* region = e.region + begin;
  if (p.op == Op::kSave) {
    Copy(saved, region, n);
    return;
  }
  if (p.op == Op::kRestore) {
    Copy(region, saved, n);
    return;
  }
  const unsigned long long first = Compare(saved, region, n);
  if (first != kNone) {
    atomicMax(&p.difference->work_first_inv,
              ~(static_cast<unsigned long long>(j) * kChecksumBlockBytes + begin + first));
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) ArriveAndPublish(p);
}

}  // namespace

cudaError_t LaunchSnapshot(const Params& params, int64_t num_entries, cudaStream_t stream) {
  const unsigned int grid = static_cast<unsigned int>(num_entries * params.parts);
  SnapshotKernel<<<grid, kThreads, 0, stream>>>(params);
  return ::encore::cuda().GetLastError();
}

}  // namespace encore::snapshot
