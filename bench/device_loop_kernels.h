// SPDX-License-Identifier: Apache-2.0
// Kernels of bench/device_loop_micro: a step of work that keeps the GPU busy
// for a set number of clock cycles, and the countdown that decides on the
// device whether another step follows.
#ifndef ENCORE_BENCH_DEVICE_LOOP_KERNELS_H_
#define ENCORE_BENCH_DEVICE_LOOP_KERNELS_H_

#include <cuda_runtime_api.h>

namespace encore::bench {

// One block of 32 threads spinning for `cycles` SM clock cycles; then
// *steps += 1.
cudaError_t LaunchBusyStep(long long cycles, unsigned long long* steps, cudaStream_t s);
// *left = n; *go = n > 0.
cudaError_t LaunchCountdownInit(int* left, bool* go, int n, cudaStream_t s);
// *left -= 1; *go = *left > 0.
cudaError_t LaunchCountdownStep(int* left, bool* go, cudaStream_t s);

}  // namespace encore::bench

#endif  // ENCORE_BENCH_DEVICE_LOOP_KERNELS_H_
