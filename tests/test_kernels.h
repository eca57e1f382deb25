// SPDX-License-Identifier: Apache-2.0
// Small kernels the GPU tests, examples and benchmark build methods from.
// Each returns the launch's error (cudaGetLastError) so callers can check it.
#ifndef ENCORE_TESTS_TEST_KERNELS_H_
#define ENCORE_TESTS_TEST_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore::testing {

// p[i] = v
cudaError_t LaunchFill(float* p, float v, int64_t n, cudaStream_t s);
// out[i] = in[i] * a + b
cudaError_t LaunchAffine(const float* in, float* out, float a, float b, int64_t n, cudaStream_t s);
// out[i] = in[i] + c[i % m]
cudaError_t LaunchAddBroadcast(const float* in, const float* c, int64_t m, float* out, int64_t n,
                               cudaStream_t s);
// p[i] += 1, `k` separate launches.
cudaError_t LaunchIncrementK(float* p, int64_t n, int k, cudaStream_t s);
// out[i] = in[i] + *scalar (a device scalar)
cudaError_t LaunchAddDeviceScalar(const float* in, const float* scalar, float* out, int64_t n,
                                  cudaStream_t s);
// *all = every in[i] > 0 (one block; n up to any size)
cudaError_t LaunchAllPositive(const float* in, int64_t n, bool* all, cudaStream_t s);
// *counter += 1 (one thread)
cudaError_t LaunchBump(int* counter, cudaStream_t s);

// A decode-like step (one thread): p = *pos; cache[p * stride] = x[0] + p;
// y[0] = 2 * cache[p * stride]; *pos = p + 1.
cudaError_t LaunchAppend(float* cache, int64_t stride, int* pos, const float* x, float* y, cudaStream_t s);
// One loop step (one thread): y[0] += x[0]; --*n; *more = *n > 0.
cudaError_t LaunchCountdown(int* n, bool* more, const float* x, float* y, cudaStream_t s);
// *flag = *n > 0 (one thread).
cudaError_t LaunchIsPositive(const int* n, bool* flag, cudaStream_t s);
// *flag = *n is odd (one thread).
cudaError_t LaunchIsOdd(const int* n, bool* flag, cudaStream_t s);
// p[0] += v (one thread).
cudaError_t LaunchAddScalar(float* p, float v, cudaStream_t s);
// *flag = x[0] > threshold (one thread).
cudaError_t LaunchGreater(const float* x, float threshold, bool* flag, cudaStream_t s);
// Keeps the device busy for units * ns_per_unit nanoseconds (one thread):
// work whose time grows with the rows a call runs.
cudaError_t LaunchSpin(int64_t units, int64_t ns_per_unit, cudaStream_t s);

}  // namespace encore::testing

#endif  // ENCORE_TESTS_TEST_KERNELS_H_
