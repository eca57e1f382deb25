// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/internal/graph.h"

#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace internal {
cudaError_t GraphTraits::Destroy(cudaGraph_t g) { return cuda().GraphDestroy(g); }
cudaError_t GraphExecTraits::Destroy(cudaGraphExec_t e) { return cuda().GraphExecDestroy(e); }
}  // namespace internal

StatusOr<Graph> Graph::Create() {
  cudaGraph_t g = nullptr;
  ENCORE_CUDA_CALL(GraphCreate, &g, 0);
  return Graph(g);
}

StatusOr<size_t> Graph::NodeCount() const {
  size_t n = 0;
  ENCORE_CUDA_CALL(GraphGetNodes, get(), nullptr, &n);
  return n;
}

StatusOr<std::vector<cudaGraphNode_t>> GraphNodes(cudaGraph_t graph) {
  size_t n = 0;
  ENCORE_CUDA_CALL(GraphGetNodes, graph, nullptr, &n);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) ENCORE_CUDA_CALL(GraphGetNodes, graph, nodes.data(), &n);
  nodes.resize(n);
  return nodes;
}

StatusOr<GraphExec> GraphExec::Instantiate(const Graph& graph, unsigned long long flags) {
  cudaGraphExec_t e = nullptr;
  ENCORE_CUDA_CALL(GraphInstantiate, &e, graph.get(), flags);
  return GraphExec(e);
}

Status GraphExec::Launch(cudaStream_t stream) const {
  ENCORE_CUDA_CALL(GraphLaunch, get(), stream);
  return OkStatus();
}

Status GraphExec::Upload(cudaStream_t stream) const {
  ENCORE_CUDA_CALL(GraphUpload, get(), stream);
  return OkStatus();
}

Status GraphExec::Update(const Graph& graph) {
  cudaGraphExecUpdateResultInfo info{};
  cudaError_t err = cuda().GraphExecUpdate(get(), graph.get(), &info);
  if (err == cudaSuccess) return OkStatus();
  // A refused update leaves a sticky-looking error behind in cudart's
  // last-error slot; clear it so the caller's own cudaGetLastError stays clean.
  (void)cuda().GetLastError();
  return CudaResult(err, CudaCall::kGraphExecUpdate,
                    "update result " + std::to_string(static_cast<int>(info.result)));
}

}  // namespace encore
