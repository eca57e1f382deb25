// SPDX-License-Identifier: Apache-2.0
// Kernels for binding_gpu_test: references to a method's tensors in every
// form the direct binding's scan must find, and two it cannot.
#ifndef ENCORE_TESTS_BINDING_TEST_KERNELS_H_
#define ENCORE_TESTS_BINDING_TEST_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore::testing {

struct AffineArgs {
  const float* in;
  float* out;
  int64_t n;
  float a;
};
// out[i] = in[i] * a, its pointers inside a struct argument.
cudaError_t LaunchStructAffine(AffineArgs args, cudaStream_t s);
// out[i] += in[i], `in` passed as two 32-bit halves: no word holds it.
cudaError_t LaunchAddFromHalves(const float* in, float* out, int64_t n, cudaStream_t s);
// out[i] = in[i], `out` passed as two 32-bit halves: no word holds it.
cudaError_t LaunchCopyToHalves(const float* in, float* out, int64_t n, cudaStream_t s);
// out[0] = 0, out[i] = in[i - 1]: all zeros when done in place.
// out[i] = 2 * in[i], by a kernel no other test launches: its parameter
// layout is read (and kept) the first time a scan meets it, so a test can
// fail that read.
cudaError_t LaunchDoubleOnlyHere(const float* in, float* out, int64_t n, cudaStream_t s);
cudaError_t LaunchShiftRight(const float* in, float* out, int64_t n, cudaStream_t s);
// out[i] = in[i] after every thread has waited `ns` nanoseconds: a launch
// slow enough that two launches on two streams would overlap.
cudaError_t LaunchSlowCopy(const float* in, float* out, int64_t n, uint64_t ns, cudaStream_t s);
// *out = sum of in[0..n), by CUB's DeviceReduce, temp storage from `alloc`.
cudaError_t CubSum(const float* in, float* out, int64_t n, void* temp, size_t* temp_bytes, cudaStream_t s);

}  // namespace encore::testing

#endif  // ENCORE_TESTS_BINDING_TEST_KERNELS_H_
