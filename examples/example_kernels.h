// SPDX-License-Identifier: Apache-2.0
// The kernels the examples build their methods from. Each returns the
// launch's error. Every output element is computed by one thread in a fixed
// order, so a kernel gives the same bits eagerly and inside a CUDA graph.
#ifndef ENCORE_EXAMPLES_EXAMPLE_KERNELS_H_
#define ENCORE_EXAMPLES_EXAMPLE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore::examples {

// y[m, n] = sum_k x[m, k] * w[k, n] + b[n], then max(0, .) if `relu`.
// Row-major; a 16x16-tiled GEMM.
cudaError_t LaunchLinear(const float* x, const float* w, const float* b, float* y, int m, int k, int n, bool relu,
                         cudaStream_t s);

// One decode step over a KV cache of `capacity` rows of `d` floats, whose
// length lives on the device in *len: appends x (d floats) as row *len, sets
// y = softmax_j(x . cache[j] / sqrt(d)) weighted sum of cache[j] over the
// rows so far, and increments *len. A full cache sets *len to -1 instead.
cudaError_t LaunchDecodeStep(const float* x, float* cache, int capacity, int* len, float* y, int d,
                             cudaStream_t s);

// mask[i] = x[i] > 0
cudaError_t LaunchPositiveMask(const float* x, bool* mask, int64_t n, cudaStream_t s);
// y[i] = mask[i] ? x[i] / count : 0
cudaError_t LaunchDivideMasked(const float* x, const bool* mask, int64_t count, float* y, int64_t n,
                               cudaStream_t s);

// p = softmax over each row of x (rows x cols).
cudaError_t LaunchSoftmaxRows(const float* x, float* p, int rows, int cols, cudaStream_t s);
// *ok = every row of p sums to 1 within `tol` (false for NaN).
cudaError_t LaunchRowsSumToOne(const float* p, int rows, int cols, float tol, bool* ok, cudaStream_t s);

// Attention's shape without its arithmetic: the batch's `tokens` rows are
// `nseq` sequences whose lengths live on the device (they change on every
// call), and a[r, :] = the mean of h over the rows of r's sequence up to r.
// `dim` <= 1024.
cudaError_t LaunchRaggedMean(const float* h, const int* lengths, int nseq, float* a, int tokens, int dim,
                             cudaStream_t s);

// A toy decoder over a vocabulary of `vocab` tokens (<= 1024) with
// embeddings emb[vocab, d]. State on the device: *token (the last token),
// *pos (tokens generated so far), *more (whether to generate another).
// DecodeStart sets *token = *prompt, *pos = 0, *more = limit > 0.
// DecodeNext picks the next token as the argmax over v of emb[v] . emb[token]
// plus a hash of (v, pos, *prompt) (ties to the smaller v), writes it to
// tokens[pos], increments *pos, and sets *more = token != end && pos < limit.
cudaError_t LaunchDecodeStart(const int* prompt, int* token, int* pos, bool* more, int limit, cudaStream_t s);
cudaError_t LaunchDecodeNext(const float* emb, int vocab, int d, const int* prompt, int* token, int* pos,
                             bool* more, int* tokens, int end, int limit, cudaStream_t s);

// Conjugate gradients on A x = b (A n x n, symmetric positive definite,
// n <= 1024), one block. cg holds x, r, p (n floats each) and rs = r . r.
// CgStart sets x = 0, r = p = b, rs, and *more = rs > tol^2. CgStep does one
// iteration and sets *more = rs > tol^2; *iterations counts them.
cudaError_t LaunchCgStart(const float* b, int n, float* x, float* r, float* p, float* rs, bool* more, float tol,
                          int* iterations, cudaStream_t s);
cudaError_t LaunchCgStep(const float* a, int n, float* x, float* r, float* p, float* rs, bool* more, float tol,
                         int* iterations, cudaStream_t s);

}  // namespace encore::examples

#endif  // ENCORE_EXAMPLES_EXAMPLE_KERNELS_H_
