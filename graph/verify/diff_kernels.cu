// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/tensor.h"
#include "encore/graph/verify/internal/diff_kernels.h"

namespace encore::diff {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kMaxCtas = 4096;
constexpr unsigned long long kNone = ~0ull;

// The offset in elements of row-major element k; 32-bit division where the
// numbers fit, since 64-bit division is a long software sequence.
__device__ int64_t ElementOffset(const Params& p, uint64_t k) {
  int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const uint64_t size = static_cast<uint64_t>(p.shape[d]);
    uint64_t q;
    if (((k | size) >> 32) == 0) {
      q = static_cast<uint32_t>(k) / static_cast<uint32_t>(size);
    } else {
      q = k / size;
    }
    off += static_cast<int64_t>(k - q * size) * p.strides[d];
    k = q;
  }
  return off;
}

__device__ uint64_t LoadBits(const unsigned char* at, int bytes, bool aligned) {
  if (aligned) {
    switch (bytes) {
      case 1:
        return *at;
      case 2:
        return *reinterpret_cast<const unsigned short*>(at);
      case 4:
        return *reinterpret_cast<const unsigned int*>(at);
      default:
        return *reinterpret_cast<const unsigned long long*>(at);
    }
  }
  uint64_t v = 0;
  for (int b = 0; b < bytes; ++b) v |= static_cast<uint64_t>(at[b]) << (8 * b);
  return v;
}

// Exact, as HalfToFloat in graph/verify/output_compare.cc.
__device__ float HalfBitsToFloat(uint32_t h) {
  const uint32_t sign = (h >> 15) & 1;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
  } else if (exp == 31) {
    v = mant != 0 ? __int_as_float(0x7fc00000) : __int_as_float(0x7f800000);
  } else {
    v = __uint_as_float(((exp + 112) << 23) | (mant << 13));
  }
  return sign != 0 ? -v : v;
}

// ElementValue (graph/verify/internal/output_compare.h) on the device.
__device__ double Value(int dtype, uint64_t bits) {
  switch (static_cast<DType>(dtype)) {
    case DType::kFloat32:
      return __uint_as_float(static_cast<uint32_t>(bits));
    case DType::kFloat16:
      return HalfBitsToFloat(static_cast<uint32_t>(bits));
    case DType::kBFloat16:
      return __uint_as_float(static_cast<uint32_t>(bits) << 16);
    case DType::kFloat64:
      return __longlong_as_double(static_cast<long long>(bits));
    case DType::kInt64:
      return static_cast<double>(static_cast<long long>(bits));
    case DType::kInt32:
      return static_cast<int32_t>(static_cast<uint32_t>(bits));
    case DType::kInt8:
      return static_cast<int8_t>(static_cast<uint8_t>(bits));
    case DType::kUInt8:
    case DType::kBool:
      return static_cast<uint8_t>(bits);
  }
  return 0;
}

// Close in graph/verify/output_compare.cc.
__device__ bool Close(double g, double e, double tol) {
  if (isnan(g) || isnan(e)) return isnan(g) && isnan(e);
  if (isinf(g) || isinf(e)) return g == e;
  return fabs(g - e) <= tol * fmax(1.0, fabs(e));
}

__device__ bool SameElement(const Params& p, int64_t offset) {
  const unsigned char* g = p.graph + offset * p.elem_bytes;
  const uint64_t gb = LoadBits(g, p.elem_bytes, p.elem_aligned != 0);
  if (p.fill >= 0) return gb == static_cast<uint64_t>(p.fill);  // bytes only: elem_bytes is 1
  const unsigned char* e = p.eager + offset * p.elem_bytes;
  const uint64_t eb = LoadBits(e, p.elem_bytes, p.elem_aligned != 0);
  if (p.tolerance == 0) return gb == eb;
  return Close(Value(p.dtype, gb), Value(p.dtype, eb), p.tolerance);
}

__device__ __forceinline__ uint64_t GlobalThread() {
  return static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
}
__device__ __forceinline__ uint64_t GridThreads() { return static_cast<uint64_t>(gridDim.x) * kThreads; }

// The first differing element this thread sees (its indices ascend, so
// that is its smallest), or kNone.
__device__ unsigned long long ThreadFirstElementwise(const Params& p) {
  for (uint64_t k = GlobalThread(); k < static_cast<uint64_t>(p.numel); k += GridThreads()) {
    const int64_t off = p.contiguous ? static_cast<int64_t>(k) : ElementOffset(p, k);
    if (!SameElement(p, off)) return k;
  }
  return kNone;
}

// Contiguous and bitwise: 16 bytes at a time, then the elements after the
// last whole 16 bytes.
__device__ unsigned long long ThreadFirstVector(const Params& p) {
  const uint64_t bytes = static_cast<uint64_t>(p.numel) * p.elem_bytes;
  const uint64_t chunks = bytes / 16;
  const uint4* g = reinterpret_cast<const uint4*>(p.graph);
  const uint4* e = reinterpret_cast<const uint4*>(p.eager);
  const uint64_t per_chunk = 16 / p.elem_bytes;
  const unsigned int word = p.fill >= 0 ? 0x01010101u * static_cast<unsigned int>(p.fill) : 0;
  for (uint64_t c = GlobalThread(); c < chunks; c += GridThreads()) {
    const uint4 a = __ldcs(g + c);
    const uint4 b = p.fill >= 0 ? make_uint4(word, word, word, word) : __ldcs(e + c);
    if (a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w) continue;
    for (uint64_t k = c * per_chunk;; ++k) {
      if (!SameElement(p, static_cast<int64_t>(k))) return k;
    }
  }
  for (uint64_t k = chunks * per_chunk + GlobalThread(); k < static_cast<uint64_t>(p.numel); k += GridThreads()) {
    if (!SameElement(p, static_cast<int64_t>(k))) return k;
  }
  return kNone;
}

__device__ void ArriveAndPublish(const Params& p) {
  DeviceResult* r = p.result;
  __threadfence();
  if (atomicAdd(&r->ticket, 1u) != gridDim.x - 1) return;
  const unsigned long long inv = atomicExch(&r->work_first_inv, 0ull);
  r->first_inv = inv;
  if (inv != 0) {
    const uint64_t k = ~inv;
    const int64_t off = (p.contiguous ? static_cast<int64_t>(k) : ElementOffset(p, k)) * p.elem_bytes;
    for (int b = 0; b < 8; ++b) {
      r->graph[b] = b < p.elem_bytes ? p.graph[off + b] : 0;
      r->eager[b] = b >= p.elem_bytes ? 0 : p.fill >= 0 ? static_cast<unsigned char>(p.fill) : p.eager[off + b];
    }
  }
  r->ticket = 0;
  __threadfence();
}

__global__ void __launch_bounds__(kThreads) FirstDifferenceKernel(Params p) {
  const unsigned long long first = p.vector16 ? ThreadFirstVector(p) : ThreadFirstElementwise(p);
  if (first != kNone) atomicMax(&p.result->work_first_inv, ~first);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) ArriveAndPublish(p);
}

}  // namespace

cudaError_t LaunchFirstDifference(const Params& params, cudaStream_t stream) {
  const uint64_t units = params.vector16 ? static_cast<uint64_t>(params.numel) * params.elem_bytes / 16 + 1
                                         : static_cast<uint64_t>(params.numel);
  const unsigned int grid =
      static_cast<unsigned int>(std::clamp<uint64_t>((units + kThreads - 1) / kThreads, 1, kMaxCtas));
  FirstDifferenceKernel<<<grid, kThreads, 0, stream>>>(params);
  return ::encore::cuda().GetLastError();
}

}  // namespace encore::diff
