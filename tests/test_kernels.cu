// SPDX-License-Identifier: Apache-2.0
#include "encore/tests/test_kernels.h"

namespace encore::testing {
namespace {

constexpr int kThreads = 256;
int Blocks(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads > 0 ? (n + kThreads - 1) / kThreads : 1); }

__global__ void FillKernel(float* p, float v, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}
__global__ void AffineKernel(const float* in, float* out, float a, float b, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] * a + b;
}
__global__ void AddBroadcastKernel(const float* in, const float* c, int64_t m, float* out, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + c[i % m];
}
__global__ void IncrementKernel(float* p, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}
__global__ void AddDeviceScalarKernel(const float* in, const float* s, float* out, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + *s;
}
__global__ void BumpKernel(int* c) { *c += 1; }
__global__ void AllPositiveKernel(const float* in, int64_t n, bool* all) {
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (!(in[i] > 0.0f)) bad = 1;
  }
  __syncthreads();
  if (threadIdx.x == 0) *all = bad == 0;
}

}  // namespace

cudaError_t LaunchFill(float* p, float v, int64_t n, cudaStream_t s) {
  FillKernel<<<Blocks(n), kThreads, 0, s>>>(p, v, n);
  return cudaGetLastError();
}
cudaError_t LaunchAffine(const float* in, float* out, float a, float b, int64_t n, cudaStream_t s) {
  AffineKernel<<<Blocks(n), kThreads, 0, s>>>(in, out, a, b, n);
  return cudaGetLastError();
}
cudaError_t LaunchAddBroadcast(const float* in, const float* c, int64_t m, float* out, int64_t n,
                               cudaStream_t s) {
  AddBroadcastKernel<<<Blocks(n), kThreads, 0, s>>>(in, c, m, out, n);
  return cudaGetLastError();
}
cudaError_t LaunchIncrementK(float* p, int64_t n, int k, cudaStream_t s) {
  for (int i = 0; i < k; ++i) {
    IncrementKernel<<<Blocks(n), kThreads, 0, s>>>(p, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t LaunchAddDeviceScalar(const float* in, const float* scalar, float* out, int64_t n,
                                  cudaStream_t s) {
  AddDeviceScalarKernel<<<Blocks(n), kThreads, 0, s>>>(in, scalar, out, n);
  return cudaGetLastError();
}
cudaError_t LaunchAllPositive(const float* in, int64_t n, bool* all, cudaStream_t s) {
  AllPositiveKernel<<<1, kThreads, 0, s>>>(in, n, all);
  return cudaGetLastError();
}
cudaError_t LaunchBump(int* counter, cudaStream_t s) {
  BumpKernel<<<1, 1, 0, s>>>(counter);
  return cudaGetLastError();
}

namespace {
__global__ void AppendKernel(float* cache, int64_t stride, int* pos, const float* x, float* y) {
  const int p = *pos;
  cache[p * stride] = x[0] + static_cast<float>(p);
  y[0] = 2.0f * cache[p * stride];
  *pos = p + 1;
}
__global__ void CountdownKernel(int* n, bool* more, const float* x, float* y) {
  y[0] += x[0];
  *n -= 1;
  *more = *n > 0;
}
__global__ void IsPositiveKernel(const int* n, bool* flag) { *flag = *n > 0; }
__global__ void IsOddKernel(const int* n, bool* flag) { *flag = (*n % 2) != 0; }
__global__ void AddScalarKernel(float* p, float v) { p[0] += v; }
__global__ void GreaterKernel(const float* x, float threshold, bool* flag) { *flag = x[0] > threshold; }
}  // namespace

cudaError_t LaunchAppend(float* cache, int64_t stride, int* pos, const float* x, float* y, cudaStream_t s) {
  AppendKernel<<<1, 1, 0, s>>>(cache, stride, pos, x, y);
  return cudaGetLastError();
}
cudaError_t LaunchCountdown(int* n, bool* more, const float* x, float* y, cudaStream_t s) {
  CountdownKernel<<<1, 1, 0, s>>>(n, more, x, y);
  return cudaGetLastError();
}
cudaError_t LaunchIsPositive(const int* n, bool* flag, cudaStream_t s) {
  IsPositiveKernel<<<1, 1, 0, s>>>(n, flag);
  return cudaGetLastError();
}
cudaError_t LaunchIsOdd(const int* n, bool* flag, cudaStream_t s) {
  IsOddKernel<<<1, 1, 0, s>>>(n, flag);
  return cudaGetLastError();
}
cudaError_t LaunchAddScalar(float* p, float v, cudaStream_t s) {
  AddScalarKernel<<<1, 1, 0, s>>>(p, v);
  return cudaGetLastError();
}
cudaError_t LaunchGreater(const float* x, float threshold, bool* flag, cudaStream_t s) {
  GreaterKernel<<<1, 1, 0, s>>>(x, threshold, flag);
  return cudaGetLastError();
}

namespace {
// One thread busy for units * ns_per_unit nanoseconds of the device's clock.
__global__ void SpinKernel(int64_t units, int64_t ns_per_unit) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  const unsigned long long until = start + static_cast<unsigned long long>(units * ns_per_unit);
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now < until);
}
}  // namespace

cudaError_t LaunchSpin(int64_t units, int64_t ns_per_unit, cudaStream_t s) {
  SpinKernel<<<1, 1, 0, s>>>(units, ns_per_unit);
  return cudaGetLastError();
}

}  // namespace encore::testing
