// SPDX-License-Identifier: Apache-2.0
// Graph and GraphExec: move-only owners of a CUDA graph and of its executable.
// Both are CudaHandles: destructors never throw, and a refused destroy is
// logged at error. GraphNodes lists a graph's top-level nodes.
#ifndef ENCORE_GRAPH_INTERNAL_GRAPH_H_
#define ENCORE_GRAPH_INTERNAL_GRAPH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "encore/core/cuda_handle.h"
#include "encore/core/status.h"

namespace encore {

namespace internal {
struct GraphTraits {
  using Handle = cudaGraph_t;
  static cudaError_t Destroy(cudaGraph_t g);
  static constexpr std::string_view kWhat = "graph";
};
struct GraphExecTraits {
  using Handle = cudaGraphExec_t;
  static cudaError_t Destroy(cudaGraphExec_t e);
  static constexpr std::string_view kWhat = "graph_exec";
};
}  // namespace internal

class Graph : public CudaHandle<internal::GraphTraits> {
 public:
  using CudaHandle::CudaHandle;
  [[nodiscard]] static StatusOr<Graph> Create();
  [[nodiscard]] StatusOr<size_t> NodeCount() const;
};

// The nodes of `graph` (not of the graphs nested in them), in CUDA's order.
[[nodiscard]] StatusOr<std::vector<cudaGraphNode_t>> GraphNodes(cudaGraph_t graph);

class GraphExec : public CudaHandle<internal::GraphExecTraits> {
 public:
  using CudaHandle::CudaHandle;
  // Instantiates `graph`. Failures name cudaGraphInstantiateWithFlags.
  [[nodiscard]] static StatusOr<GraphExec> Instantiate(const Graph& graph, unsigned long long flags = 0);
  [[nodiscard]] Status Launch(cudaStream_t stream) const;
  // Queues the upload of this executable (or of what a rewrite changed in
  // it) behind `stream`'s work and its earlier launches, so that its next
  // launch on `stream` does not pay for it on the host.
  [[nodiscard]] Status Upload(cudaStream_t stream) const;
  // Updates this executable in place to run `graph`. kFailedPrecondition
  // when CUDA refuses the update (a different topology, say); the executable
  // is then unchanged and still runs the graph it ran before.
  [[nodiscard]] Status Update(const Graph& graph);
};

}  // namespace encore

#endif  // ENCORE_GRAPH_INTERNAL_GRAPH_H_
