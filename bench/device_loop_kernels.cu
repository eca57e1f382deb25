// SPDX-License-Identifier: Apache-2.0
#include "encore/bench/device_loop_kernels.h"

namespace encore::bench {
namespace {

__global__ void BusyStepKernel(long long cycles, unsigned long long* steps) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  __syncthreads();
  if (threadIdx.x == 0) *steps += 1;
}

__global__ void CountdownInitKernel(int* left, bool* go, int n) {
  *left = n;
  *go = n > 0;
}

__global__ void CountdownStepKernel(int* left, bool* go) {
  const int l = *left - 1;
  *left = l;
  *go = l > 0;
}

}  // namespace

cudaError_t LaunchBusyStep(long long cycles, unsigned long long* steps, cudaStream_t s) {
  BusyStepKernel<<<1, 32, 0, s>>>(cycles, steps);
  return cudaGetLastError();
}

cudaError_t LaunchCountdownInit(int* left, bool* go, int n, cudaStream_t s) {
  CountdownInitKernel<<<1, 1, 0, s>>>(left, go, n);
  return cudaGetLastError();
}

cudaError_t LaunchCountdownStep(int* left, bool* go, cudaStream_t s) {
  CountdownStepKernel<<<1, 1, 0, s>>>(left, go);
  return cudaGetLastError();
}

}  // namespace encore::bench
