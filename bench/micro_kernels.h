// SPDX-License-Identifier: Apache-2.0
// Kernels for the micro benchmarks: a one-copy staging kernel with small
// parameters and the unit of work (out = in + 1, and a chain of it).
#ifndef ENCORE_BENCH_MICRO_KERNELS_H_
#define ENCORE_BENCH_MICRO_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore::bench {

cudaError_t LaunchSmallCopy(const void* src, void* dst, uint64_t bytes, cudaStream_t s);
cudaError_t LaunchAddOne(const float* in, float* out, int n, cudaStream_t s);
// The benchmarks' unit of work: out = in + 1, then k - 1 launches of
// out += 1 (every kernel names the output).
cudaError_t LaunchAddOneChain(const float* in, float* out, int n, int k, cudaStream_t s);

// One thread adds 1 to *counter: a completion mark a graph's last node can
// make without an event (stages_micro's completion variants).
cudaError_t LaunchBump(unsigned long long* counter, cudaStream_t s);
// The same kernel, for a node added to a graph (one block of one thread,
// one parameter: the counter).
const void* BumpKernel();

// One kernel of capture_bench's model: state[i] = state[i] * 0.5 + w[i % 16384]
// + in[i % n] over `chunk` floats of the state, and out[i] = in[i] + w[i] for
// i < n.
cudaError_t LaunchStateStep(const float* in, const float* w, float* state, size_t chunk, float* out, int n,
                            cudaStream_t s);

}  // namespace encore::bench

#endif  // ENCORE_BENCH_MICRO_KERNELS_H_
