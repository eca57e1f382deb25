// SPDX-License-Identifier: Apache-2.0
#include "encore/bench/exec_forms.h"

#include <cuda.h>

#include <vector>

#include "encore/bench/micro_kernels.h"
#include "encore/core/internal/cuda_api.h"
#include "encore/examples/example_util.h"

namespace encore::bench {
namespace {

// AddOne's arguments, owned here: the pointers the driver hands back from a
// node stop being valid once its parameters are set.
struct AddOneArgs {
  const float* in = nullptr;
  float* out = nullptr;
  int n = 0;
  void* ptrs[3] = {};
};

cudaGraph_t CaptureGraph(const float* in, float* out, int n, int k, cudaStream_t s) {
  cudaGraph_t g = nullptr;
  EX_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EX_CUDA(LaunchAddOneChain(in, out, n, k, s));
  EX_CUDA(cudaStreamEndCapture(s, &g));
  return g;
}

std::vector<cudaGraphNode_t> Nodes(cudaGraph_t g) {
  size_t count = 0;
  EX_CUDA(cudaGraphGetNodes(g, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  EX_CUDA(cudaGraphGetNodes(g, nodes.data(), &count));
  return nodes;
}

// Points `kernel_params` (AddOne's, as CUDA handed them back) at copies in
// `a`.
void** Own(void** kernel_params, AddOneArgs* a) {
  a->in = *static_cast<const float* const*>(kernel_params[0]);
  a->out = *static_cast<float* const*>(kernel_params[1]);
  a->n = *static_cast<const int*>(kernel_params[2]);
  a->ptrs[0] = &a->in;
  a->ptrs[1] = &a->out;
  a->ptrs[2] = &a->n;
  return a->ptrs;
}

// Each node's parameters as the driver reads them, with the arguments
// copied into `args` (one per node, kept alive by the caller).
std::vector<CUDA_KERNEL_NODE_PARAMS> ReadParams(const std::vector<cudaGraphNode_t>& nodes,
                                                std::vector<AddOneArgs>* args) {
  std::vector<CUDA_KERNEL_NODE_PARAMS> params(nodes.size());
  args->resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    EX_CUDA(cuda().DriverGraphKernelNodeGetParams(nodes[i], &params[i]));
    params[i].kernelParams = Own(params[i].kernelParams, &(*args)[i]);
    params[i].extra = nullptr;
  }
  return params;
}

// A clone of `g` whose kernel nodes were given their parameters again.
cudaGraph_t CloneWithParamsSet(cudaGraph_t g) {
  cudaGraph_t clone = nullptr;
  EX_CUDA(cudaGraphClone(&clone, g));
  const std::vector<cudaGraphNode_t> nodes = Nodes(clone);
  std::vector<AddOneArgs> args;
  std::vector<CUDA_KERNEL_NODE_PARAMS> params = ReadParams(nodes, &args);
  for (size_t i = 0; i < nodes.size(); ++i) EX_CUDA(cuda().DriverGraphKernelNodeSetParams(nodes[i], &params[i]));
  return clone;
}

// Gives each kernel node of `e` (instantiated from `g`) its parameters again.
void SetOnExec(cudaGraph_t g, cudaGraphExec_t e) {
  const std::vector<cudaGraphNode_t> nodes = Nodes(g);
  std::vector<AddOneArgs> args;
  std::vector<CUDA_KERNEL_NODE_PARAMS> params = ReadParams(nodes, &args);
  for (size_t i = 0; i < nodes.size(); ++i) EX_CUDA(cuda().DriverGraphExecKernelNodeSetParams(e, nodes[i], &params[i]));
}

cudaGraphExec_t Instantiate(cudaGraph_t g) {
  cudaGraphExec_t e = nullptr;
  EX_CUDA(cudaGraphInstantiate(&e, g, 0));
  return e;
}

}  // namespace

cudaGraphExec_t CaptureChainSetOnClone(const float* in, float* out, int n, int k, cudaStream_t s) {
  cudaGraph_t g = CaptureGraph(in, out, n, k, s);
  cudaGraph_t clone = CloneWithParamsSet(g);
  const cudaGraphExec_t e = Instantiate(clone);
  EX_CUDA(cudaGraphDestroy(clone));
  EX_CUDA(cudaGraphDestroy(g));
  return e;
}

cudaGraphExec_t CaptureChainSetOnExec(const float* in, float* out, int n, int k, cudaStream_t s) {
  cudaGraph_t g = CaptureGraph(in, out, n, k, s);
  const cudaGraphExec_t e = Instantiate(g);
  SetOnExec(g, e);
  EX_CUDA(cudaGraphDestroy(g));
  return e;
}

cudaGraphExec_t CaptureChainSetOnExecAfterLaunch(const float* in, float* out, int n, int k, cudaStream_t s,
                                                 bool wait_for_launch) {
  cudaGraph_t g = CaptureGraph(in, out, n, k, s);
  const cudaGraphExec_t e = Instantiate(g);
  EX_CUDA(cudaGraphLaunch(e, s));
  if (wait_for_launch) EX_CUDA(cudaStreamSynchronize(s));
  SetOnExec(g, e);
  EX_CUDA(cudaStreamSynchronize(s));
  EX_CUDA(cudaGraphDestroy(g));
  return e;
}

cudaGraphExec_t CaptureChainSetOnExecUploaded(const float* in, float* out, int n, int k, cudaStream_t s) {
  cudaGraphExec_t e = CaptureChainSetOnExec(in, out, n, k, s);
  EX_CUDA(cudaGraphUpload(e, s));
  EX_CUDA(cudaStreamSynchronize(s));
  return e;
}

cudaGraphExec_t CaptureChainSetOnExecRuntime(const float* in, float* out, int n, int k, cudaStream_t s) {
  cudaGraph_t g = CaptureGraph(in, out, n, k, s);
  const cudaGraphExec_t e = Instantiate(g);
  for (cudaGraphNode_t node : Nodes(g)) {
    cudaKernelNodeParams p{};
    EX_CUDA(cudaGraphKernelNodeGetParams(node, &p));
    AddOneArgs a;
    p.kernelParams = Own(p.kernelParams, &a);
    p.extra = nullptr;
    EX_CUDA(cudaGraphExecKernelNodeSetParams(e, node, &p));
  }
  EX_CUDA(cudaGraphDestroy(g));
  return e;
}

cudaGraphExec_t CaptureChainUpdatedFromClone(const float* in, float* out, int n, int k, cudaStream_t s) {
  cudaGraph_t g = CaptureGraph(in, out, n, k, s);
  const cudaGraphExec_t e = Instantiate(g);
  cudaGraph_t clone = CloneWithParamsSet(g);
  cudaGraphExecUpdateResultInfo info{};
  EX_CUDA(cudaGraphExecUpdate(e, clone, &info));
  EX_CUDA(cudaGraphDestroy(clone));
  EX_CUDA(cudaGraphDestroy(g));
  return e;
}

}  // namespace encore::bench
