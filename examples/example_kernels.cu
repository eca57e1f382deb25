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

__global__ void RaggedMeanKernel(const float* h, const int* lengths, int nseq, float* a, int dim) {
  const int row = blockIdx.x;
  const int col = threadIdx.x;
  if (col >= dim) return;
  int start = 0;
  for (int i = 0; i < nseq && start + lengths[i] <= row; ++i) start += lengths[i];
  float sum = 0.0f;
  for (int r = start; r <= row; ++r) sum += h[static_cast<int64_t>(r) * dim + col];
  a[static_cast<int64_t>(row) * dim + col] = sum / static_cast<float>(row - start + 1);
}

__device__ unsigned Mix(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  return x ^ (x >> 16);
}

__global__ void DecodeStartKernel(const int* prompt, int* token, int* pos, bool* more, int limit) {
  *token = *prompt;
  *pos = 0;
  *more = limit > 0;
}

// One block of 1024 threads: thread v scores token v, then a tree argmax
// in a fixed order.
__global__ void DecodeNextKernel(const float* emb, int vocab, int d, const int* prompt, int* token, int* pos,
                                 bool* more, int* tokens, int end, int limit) {
  __shared__ float score[1024];
  __shared__ int index[1024];
  const int v = threadIdx.x;
  const int last = *token, at = *pos;
  float s = -INFINITY;
  if (v < vocab) {
    s = 0.0f;
    for (int j = 0; j < d; ++j) s += emb[v * d + j] * emb[last * d + j];
    s += 4.0f * static_cast<float>(Mix(v * 7919u + at * 104729u + *prompt * 15485863u) & 0xffff) / 65536.0f;
  }
  score[v] = s;
  index[v] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (v < half && (score[v + half] > score[v] || (score[v + half] == score[v] && index[v + half] < index[v]))) {
      score[v] = score[v + half];
      index[v] = index[v + half];
    }
    __syncthreads();
  }
  if (v == 0) {
    const int next = index[0];
    tokens[at] = next;
    *token = next;
    *pos = at + 1;
    *more = next != end && at + 1 < limit;
  }
}

// Sums x[i] * y[i] over one block into a value every thread gets; fixed order.
__device__ float BlockDot(const float* x, const float* y, int n, float* scratch) {
  const int t = threadIdx.x;
  scratch[t] = t < n ? x[t] * y[t] : 0.0f;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) scratch[t] += scratch[t + half];
    __syncthreads();
  }
  const float total = scratch[0];
  __syncthreads();
  return total;
}

__global__ void CgStartKernel(const float* b, int n, float* x, float* r, float* p, float* rs, bool* more, float tol,
                              int* iterations) {
  __shared__ float scratch[1024];
  const int t = threadIdx.x;
  if (t < n) {
    x[t] = 0.0f;
    r[t] = b[t];
    p[t] = b[t];
  }
  __syncthreads();
  const float rr = BlockDot(r, r, n, scratch);
  if (t == 0) {
    *rs = rr;
    *more = rr > tol * tol;
    *iterations = 0;
  }
}

__global__ void CgStepKernel(const float* a, int n, float* x, float* r, float* p, float* rs, bool* more, float tol,
                             int* iterations) {
  __shared__ float scratch[1024];
  __shared__ float ap[1024];
  const int t = threadIdx.x;
  if (t < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += a[t * n + j] * p[j];
    ap[t] = sum;
  }
  __syncthreads();
  const float rr = *rs;
  const float alpha = rr / BlockDot(p, ap, n, scratch);
  if (t < n) {
    x[t] += alpha * p[t];
    r[t] -= alpha * ap[t];
  }
  __syncthreads();
  const float rr_new = BlockDot(r, r, n, scratch);
  if (t < n) p[t] = r[t] + (rr_new / rr) * p[t];
  if (t == 0) {
    *rs = rr_new;
    *more = rr_new > tol * tol;
    *iterations += 1;
  }
}

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

cudaError_t LaunchRaggedMean(const float* h, const int* lengths, int nseq, float* a, int tokens, int dim,
                             cudaStream_t s) {
  if (dim > 1024) return cudaErrorInvalidValue;
  RaggedMeanKernel<<<tokens, dim, 0, s>>>(h, lengths, nseq, a, dim);
  return cudaGetLastError();
}

cudaError_t LaunchDecodeStart(const int* prompt, int* token, int* pos, bool* more, int limit, cudaStream_t s) {
  DecodeStartKernel<<<1, 1, 0, s>>>(prompt, token, pos, more, limit);
  return cudaGetLastError();
}

cudaError_t LaunchDecodeNext(const float* emb, int vocab, int d, const int* prompt, int* token, int* pos,
                             bool* more, int* tokens, int end, int limit, cudaStream_t s) {
  if (vocab > 1024) return cudaErrorInvalidValue;
  DecodeNextKernel<<<1, 1024, 0, s>>>(emb, vocab, d, prompt, token, pos, more, tokens, end, limit);
  return cudaGetLastError();
}

cudaError_t LaunchCgStart(const float* b, int n, float* x, float* r, float* p, float* rs, bool* more, float tol,
                          int* iterations, cudaStream_t s) {
  if (n > 1024) return cudaErrorInvalidValue;
  CgStartKernel<<<1, 1024, 0, s>>>(b, n, x, r, p, rs, more, tol, iterations);
  return cudaGetLastError();
}

cudaError_t LaunchCgStep(const float* a, int n, float* x, float* r, float* p, float* rs, bool* more, float tol,
                         int* iterations, cudaStream_t s) {
  if (n > 1024) return cudaErrorInvalidValue;
  CgStepKernel<<<1, 1024, 0, s>>>(a, n, x, r, p, rs, more, tol, iterations);
  return cudaGetLastError();
}

}  // namespace encore::examples
