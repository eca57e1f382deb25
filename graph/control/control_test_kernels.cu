// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/control_test_kernels.h"

namespace encore::testing {
namespace {

__global__ void LoopInitKernel(const int* n, int* remaining, bool* cond) {
  *remaining = *n;
  *cond = *n > 0;
}
__global__ void LoopStepKernel(int* remaining, bool* cond) {
  const int left = *remaining - 1;
  *remaining = left;
  *cond = left > 0;
}
__global__ void SetFlagKernel(bool* flag, bool value) { *flag = value; }
__global__ void CountKernel(int* counter) { *counter += 1; }

}  // namespace

cudaError_t LaunchLoopInit(const int* n, int* remaining, bool* cond, cudaStream_t s) {
  LoopInitKernel<<<1, 1, 0, s>>>(n, remaining, cond);
  return cudaGetLastError();
}
cudaError_t LaunchLoopStep(int* remaining, bool* cond, cudaStream_t s) {
  LoopStepKernel<<<1, 1, 0, s>>>(remaining, cond);
  return cudaGetLastError();
}
cudaError_t LaunchSetFlag(bool* flag, bool value, cudaStream_t s) {
  SetFlagKernel<<<1, 1, 0, s>>>(flag, value);
  return cudaGetLastError();
}
cudaError_t LaunchCount(int* counter, cudaStream_t s) {
  CountKernel<<<1, 1, 0, s>>>(counter);
  return cudaGetLastError();
}

}  // namespace encore::testing
