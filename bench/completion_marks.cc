// SPDX-License-Identifier: Apache-2.0
#include "encore/bench/completion_marks.h"

#include <cuda.h>  // driver types only: the memory-op entry point is found at run time

#include <vector>

namespace encore::bench {
namespace {

using WriteValue32Fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

WriteValue32Fn FindWriteValue32() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
  const cudaError_t err = cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t err = cudaGetDriverEntryPoint("cuStreamWriteValue32", &fn, cudaEnableDefault, &found);
#endif
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<WriteValue32Fn>(fn);
}

// The nodes of `g` that no node depends on (the chain's last kernel).
std::vector<cudaGraphNode_t> Leaves(cudaGraph_t g) {
  size_t n = 0;
  EX_CUDA(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n), leaves;
  EX_CUDA(cudaGraphGetNodes(g, nodes.data(), &n));
  for (cudaGraphNode_t node : nodes) {
    size_t dependents = 0;
#if CUDART_VERSION >= 13000
    EX_CUDA(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &dependents));
#else
    EX_CUDA(cudaGraphNodeGetDependentNodes(node, nullptr, &dependents));
#endif
    if (dependents == 0) leaves.push_back(node);
  }
  return leaves;
}

// A chain of `k` kernels on `out`, captured, then `add(graph, leaves)`
// adds its tail after the capture ended, as encore adds its record node.
template <typename Add>
cudaGraphExec_t ChainThenAdded(float* out, int n, int k, cudaStream_t s, Add add) {
  cudaGraph_t g = CaptureChainGraphThen(out, out, n, k, s, [](cudaStream_t) { return true; });
  if (g == nullptr) return nullptr;
  add(g, Leaves(g));
  return InstantiateAndDestroy(g);
}

}  // namespace

cudaGraphExec_t InstantiateAndDestroy(cudaGraph_t g) {
  if (g == nullptr) return nullptr;
  cudaGraphExec_t e = nullptr;
  EX_CUDA(cudaGraphInstantiate(&e, g, 0));
  EX_CUDA(cudaGraphDestroy(g));
  return e;
}

// `record`: the graph ends with an event record node, as encore's do.
cudaGraphExec_t CaptureChain(const float* in, float* out, int n, int k, cudaStream_t s, cudaEvent_t record) {
  return CaptureChainThen(in, out, n, k, s, [record](cudaStream_t st) {
    // External: a record node in the graph. A plain cudaEventRecord in a
    // capture adds no node (it marks a point for other streams to join), so
    // the variants read until 2026-12-03 had none.
    if (record != nullptr) EX_CUDA(cudaEventRecordWithFlags(record, st, cudaEventRecordExternal));
    return true;
  });
}

CompletionMarks MakeCompletionMarks(float* out, int n, int k, cudaStream_t s, cudaEvent_t ev) {
  CompletionMarks m;
  EX_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&m.counter), sizeof(*m.counter), cudaHostAllocMapped));
  EX_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&m.flag), sizeof(*m.flag), cudaHostAllocMapped));
  *m.counter = 0;
  *m.flag = 0;
  unsigned long long* counter_dev = nullptr;
  unsigned* flag_dev = nullptr;
  EX_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&counter_dev), m.counter, 0));
  EX_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flag_dev), m.flag, 0));
  m.bump_last = CaptureChainThen(out, out, n, k, s, [counter_dev](cudaStream_t st) {
    return LaunchBump(counter_dev, st) == cudaSuccess;
  });
  m.added_record_last = ChainThenAdded(out, n, k, s, [ev](cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps) {
    cudaGraphNode_t node;
    EX_CUDA(cudaGraphAddEventRecordNode(&node, g, deps.data(), deps.size(), ev));
  });
  m.added_bump_last = ChainThenAdded(out, n, k, s, [counter_dev](cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps) {
    unsigned long long* arg = counter_dev;
    void* args[] = {&arg};
    cudaKernelNodeParams p{};
    p.func = const_cast<void*>(BumpKernel());
    p.gridDim = dim3(1);
    p.blockDim = dim3(1);
    p.kernelParams = args;
    cudaGraphNode_t node;
    EX_CUDA(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p));
  });
  if (WriteValue32Fn write = FindWriteValue32()) {
    m.write_last = CaptureChainThen(out, out, n, k, s, [write, flag_dev](cudaStream_t st) {
      return write(st, reinterpret_cast<CUdeviceptr>(flag_dev), 1, 0) == CUDA_SUCCESS;
    });
  }
  return m;
}

}  // namespace encore::bench
