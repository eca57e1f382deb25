// SPDX-License-Identifier: Apache-2.0
// Graphs of the benchmarks' kernel chain (bench/micro_kernels.h) ending in a
// completion mark, for stages_micro: what each kind of mark costs a launch.
#ifndef ENCORE_BENCH_COMPLETION_MARKS_H_
#define ENCORE_BENCH_COMPLETION_MARKS_H_

#include <cuda_runtime_api.h>

#include "encore/bench/micro_kernels.h"
#include "encore/examples/example_util.h"

namespace encore::bench {

// A graph of `k` kernels from `in` into `out`, then `tail(s)` in the same
// capture (the graph's last node or nodes); `tail` returns whether it
// queued something capturable. Null when it did not or the capture failed.
template <typename Tail>
cudaGraph_t CaptureChainGraphThen(const float* in, float* out, int n, int k, cudaStream_t s, Tail tail) {
  cudaGraph_t g = nullptr;
  EX_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EX_CUDA(LaunchAddOneChain(in, out, n, k, s));
  const bool tail_ok = tail(s);
  const cudaError_t ended = cudaStreamEndCapture(s, &g);
  if (!tail_ok || ended != cudaSuccess) {
    (void)cudaGetLastError();
    if (ended == cudaSuccess) EX_CUDA(cudaGraphDestroy(g));
    return nullptr;
  }
  return g;
}

// `g` instantiated, then destroyed; null for a null `g`.
cudaGraphExec_t InstantiateAndDestroy(cudaGraph_t g);

// The same graph, instantiated.
template <typename Tail>
cudaGraphExec_t CaptureChainThen(const float* in, float* out, int n, int k, cudaStream_t s, Tail tail) {
  return InstantiateAndDestroy(CaptureChainGraphThen(in, out, n, k, s, tail));
}

// `record`: the graph ends with an event record node, as encore's do.
cudaGraphExec_t CaptureChain(const float* in, float* out, int n, int k, cudaStream_t s, cudaEvent_t record = nullptr);

// Completion marks other than an event record node, each the last node of
// the second graph: a one-thread kernel adding 1 to a counter in mapped
// host memory (the host polls it; another stream waits with
// cuStreamWaitValue64), and a driver memory-op node writing a value there
// (cuStreamWriteValue32 captured): which mark costs least.
struct CompletionMarks {
  unsigned long long* counter = nullptr;  // host view; the kernel gets the device view
  unsigned* flag = nullptr;
  cudaGraphExec_t bump_last = nullptr, write_last = nullptr;  // write_last: null if the capture refused it
  // Added after the capture ended (cudaGraphAdd*Node on the chain's leaf),
  // as encore adds its record node, instead of captured.
  cudaGraphExec_t added_record_last = nullptr, added_bump_last = nullptr;
  long bumps = 0;
};

// Over `out` (n floats, k kernels); `ev` is the record nodes' event.
CompletionMarks MakeCompletionMarks(float* out, int n, int k, cudaStream_t s, cudaEvent_t ev);

}  // namespace encore::bench

#endif  // ENCORE_BENCH_COMPLETION_MARKS_H_
