// SPDX-License-Identifier: Apache-2.0
#include "encore/examples/example_kernels.h"

#include <cmath>

namespace encore::examples {
namespace {

constexpr int kTile = 16;

__global__ void LinearKernel(const float* x, const float* w, const float* b, float* y, int m, int k, int n,
                             bool relu) {
  __shared__ float xs[kTile][kTile];
  __shared__ float ws[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < k; t += kTile) {
    xs[threadIdx.y][threadIdx.x] = row < m && t + threadIdx.x < k ? x[row * k + t + threadIdx.x] : 0.0f;
    ws[threadIdx.y][threadIdx.x] = t + threadIdx.y < k && col < n ? w[(t + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += xs[threadIdx.y][i] * ws[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) {
    float v = acc + b[col];
    y[row * n + col] = relu ? fmaxf(v, 0.0f) : v;
  }
}

// One block; thread t owns element t of the model dimension. Every thread
// computes the same scores in the same order, so the result is deterministic.
__global__ void DecodeStepKernel(const float* x, float* cache, int capacity, int* len, float* y, int d) {
  const int t = threadIdx.x;
  const int n = *len;
  if (n < 0 || n >= capacity) {
    __syncthreads();
    if (t == 0) *len = -1;
    return;
  }
  if (t < d) cache[n * d + t] = x[t];
  __syncthreads();
  const float scale = rsqrtf(static_cast<float>(d));
  float max_score = -INFINITY, denom = 0.0f, acc = 0.0f;
  for (int j = 0; j <= n; ++j) {
    float score = 0.0f;
    for (int i = 0; i < d; ++i) score += x[i] * cache[j * d + i];
    score *= scale;
    // Online softmax: rescale what was summed when the maximum moves.
    float new_max = fmaxf(max_score, score);
    float c = expf(max_score - new_max);
    float e = expf(score - new_max);
    denom = denom * c + e;
    if (t < d) acc = acc * c + e * cache[j * d + t];
    max_score = new_max;
  }
  if (t < d) y[t] = acc / denom;
  __syncthreads();
  if (t == 0) *len = n + 1;
}

__global__ void PositiveMaskKernel(const float* x, bool* mask, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) mask[i] = x[i] > 0.0f;
}

__global__ void DivideMaskedKernel(const float* x, const bool* mask, float count, float* y, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = mask[i] ? x[i] / count : 0.0f;
}

// One block per row.
__global__ void SoftmaxRowsKernel(const float* x, float* p, int cols) {
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* pr = p + static_cast<int64_t>(blockIdx.x) * cols;
  __shared__ float max_v, sum_v;
  if (threadIdx.x == 0) {
    float m = -INFINITY, s = 0.0f;
    for (int j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
    for (int j = 0; j < cols; ++j) s += expf(xr[j] - m);
    max_v = m;
    sum_v = s;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < cols; j += blockDim.x) pr[j] = expf(xr[j] - max_v) / sum_v;
}

__global__ void RowsSumToOneKernel(const float* p, int rows, int cols, float tol, bool* ok) {
  int good = 1;
  for (int r = threadIdx.x; r < rows; r += blockDim.x) {
    float s = 0.0f;
    for (int j = 0; j < cols; ++j) s += p[static_cast<int64_t>(r) * cols + j];
    good &= fabsf(s - 1.0f) <= tol;  // false for NaN
  }
  good = __syncthreads_and(good);
  if (threadIdx.x == 0) *ok = good != 0;
}

int Blocks(int64_t n, int threads) { return static_cast<int>(n > 0 ? (n + threads - 1) / threads : 1); }

}  // namespace

cudaError_t LaunchLinear(const float* x, const float* w, const float* b, float* y, int m, int k, int n, bool relu,
                         cudaStream_t s) {
  dim3 block(kTile, kTile);
  dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  LinearKernel<<<grid, block, 0, s>>>(x, w, b, y, m, k, n, relu);
  return cudaGetLastError();
}

cudaError_t LaunchDecodeStep(const float* x, float* cache, int capacity, int* len, float* y, int d,
                             cudaStream_t s) {
  if (d > 1024) return cudaErrorInvalidValue;
  DecodeStepKernel<<<1, d, 0, s>>>(x, cache, capacity, len, y, d);
  return cudaGetLastError();
}

cudaError_t LaunchPositiveMask(const float* x, bool* mask, int64_t n, cudaStream_t s) {
  PositiveMaskKernel<<<Blocks(n, 256), 256, 0, s>>>(x, mask, n);
  return cudaGetLastError();
}

cudaError_t LaunchDivideMasked(const float* x, const bool* mask, int64_t count, float* y, int64_t n,
                               cudaStream_t s) {
  DivideMaskedKernel<<<Blocks(n, 256), 256, 0, s>>>(x, mask, static_cast<float>(count), y, n);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxRows(const float* x, float* p, int rows, int cols, cudaStream_t s) {
  SoftmaxRowsKernel<<<rows, 128, 0, s>>>(x, p, cols);
  return cudaGetLastError();
}

cudaError_t LaunchRowsSumToOne(const float* p, int rows, int cols, float tol, bool* ok, cudaStream_t s) {
  RowsSumToOneKernel<<<1, 256, 0, s>>>(p, rows, cols, tol, ok);
  return cudaGetLastError();
}

}  // namespace encore::examples
