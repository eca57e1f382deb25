// SPDX-License-Identifier: Apache-2.0
// Kernels the graph/control GPU tests build loop bodies from: a countdown
// that keeps a device flag equal to "iterations left > 0", and a flag set.
// Each returns the launch's error (cudaGetLastError).
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_TEST_KERNELS_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_TEST_KERNELS_H_

#include <cuda_runtime_api.h>

namespace encore::testing {

// *remaining = *n; *cond = *n > 0 (one thread).
cudaError_t LaunchLoopInit(const int* n, int* remaining, bool* cond, cudaStream_t s);
// *remaining -= 1; *cond = *remaining > 0 (one thread).
cudaError_t LaunchLoopStep(int* remaining, bool* cond, cudaStream_t s);
// *flag = value (one thread).
cudaError_t LaunchSetFlag(bool* flag, bool value, cudaStream_t s);
// *counter += 1 (one thread).
cudaError_t LaunchCount(int* counter, cudaStream_t s);

}  // namespace encore::testing

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_TEST_KERNELS_H_
