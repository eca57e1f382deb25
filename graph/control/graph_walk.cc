// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/graph_walk.h"

#include <cuda.h>

#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/internal/graph.h"

namespace encore {
namespace {

constexpr int kMaxDepth = 64;

// The graphs nested in `node` (none for nodes that hold no graph).
StatusOr<std::vector<cudaGraph_t>> NestedGraphs(cudaGraphNode_t node, cudaGraphNodeType type,
                                               const ConditionalBodies* bodies) {
  if (type == cudaGraphNodeTypeGraph) {
    cudaGraph_t child = nullptr;
    ENCORE_CUDA_CALL(GraphChildGraphNodeGetGraph, node, &child);
    return std::vector<cudaGraph_t>{child};
  }
  if (type != cudaGraphNodeTypeConditional) return std::vector<cudaGraph_t>{};
  if (bodies != nullptr) {
    if (const std::vector<cudaGraph_t>* known = bodies->Find(node)) return *known;
  }
  CUgraphNodeParams params{};
  cudaError_t err = cuda().DriverGraphNodeGetParams(node, &params);
  if (err == cudaSuccess && params.type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    const CUDA_CONDITIONAL_NODE_PARAMS& c = params.conditional;
    return std::vector<cudaGraph_t>(c.phGraph_out, c.phGraph_out + c.size);
  }
  (void)cuda().GetLastError();  // ours: the refusal is reported below
  return FailedPreconditionError(
      std::string("a conditional node whose body graphs encore did not record when it built them, and this driver "
                  "cannot report them (cuGraphNodeGetParams: ") +
      cudaGetErrorName(err) + "; drivers of CUDA 13.2 and later have it)");
}

Status Walk(cudaGraph_t graph, const NodeVisitor& fn, const ConditionalBodies* bodies, int depth) {
  if (depth > kMaxDepth) {
    return FailedPreconditionError("graphs nested more than " + std::to_string(kMaxDepth) + " deep");
  }
  ENCORE_ASSIGN_OR_RETURN(std::vector<cudaGraphNode_t> nodes, GraphNodes(graph));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    ENCORE_CUDA_CALL(GraphNodeGetType, node, &type);
    ENCORE_RETURN_IF_ERROR(fn(node, type, depth));
    ENCORE_ASSIGN_OR_RETURN(std::vector<cudaGraph_t> nested, NestedGraphs(node, type, bodies));
    for (cudaGraph_t g : nested) ENCORE_RETURN_IF_ERROR(Walk(g, fn, bodies, depth + 1));
  }
  return OkStatus();
}

}  // namespace

Status ForEachNodeRecursive(cudaGraph_t graph, const NodeVisitor& fn, const ConditionalBodies* bodies) {
  if (graph == nullptr) return InvalidArgumentError("ForEachNodeRecursive: null graph");
  return Walk(graph, fn, bodies, 0);
}

StatusOr<size_t> CountNodesRecursive(cudaGraph_t graph, const ConditionalBodies* bodies) {
  size_t n = 0;
  ENCORE_RETURN_IF_ERROR(ForEachNodeRecursive(
      graph,
      [&n](cudaGraphNode_t, cudaGraphNodeType, int) {
        ++n;
        return OkStatus();
      },
      bodies));
  return n;
}

}  // namespace encore
