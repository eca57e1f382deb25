// SPDX-License-Identifier: Apache-2.0
// Walking a graph with everything nested in it: child graphs and the body
// graphs of conditional nodes, for the scans that look at every node
// (direct binding, node counts, dumps). CUDA 12.4..13.1 has no call that
// gives a conditional node's body graphs back (cuGraphNodeGetParams came
// with 13.2's driver), so ConditionalCapture records them as it makes them,
// in ConditionalBodies, and the walk reads them there.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_GRAPH_WALK_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_GRAPH_WALK_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <unordered_map>
#include <vector>

#include "encore/core/status.h"

namespace encore {

// The body graphs of conditional nodes, by node. The graphs belong to their
// nodes (CUDA destroys them with the node); this only names them.
class ConditionalBodies {
 public:
  void Add(cudaGraphNode_t node, cudaGraph_t body) { bodies_[node].push_back(body); }
  // Null when `node` is not one recorded here.
  const std::vector<cudaGraph_t>* Find(cudaGraphNode_t node) const {
    auto it = bodies_.find(node);
    return it == bodies_.end() ? nullptr : &it->second;
  }
  size_t size() const { return bodies_.size(); }
  void Clear() { bodies_.clear(); }

 private:
  std::unordered_map<cudaGraphNode_t, std::vector<cudaGraph_t>> bodies_;
};

// depth: 0 for the nodes of the graph walked, 1 for those of a child graph
// or body graph of one of them, and so on.
using NodeVisitor = std::function<Status(cudaGraphNode_t node, cudaGraphNodeType type, int depth)>;

// Calls `fn` for each node of `graph`, and right after a child-graph node
// or a conditional node for every node nested in it, recursively (parents
// before what they hold). A conditional node's bodies come from `bodies`
// or, for a node not recorded there, from cuGraphNodeGetParams where the
// driver has it; FailedPrecondition when neither knows them, since a scan
// that missed them would be wrong. The first error of `fn` (or of CUDA)
// stops the walk and is returned. Nesting deeper than 64: FailedPrecondition.
[[nodiscard]] Status ForEachNodeRecursive(cudaGraph_t graph, const NodeVisitor& fn,
                                          const ConditionalBodies* bodies = nullptr);

// Nodes of `graph` and of everything nested in it, the nesting nodes
// themselves included.
[[nodiscard]] StatusOr<size_t> CountNodesRecursive(cudaGraph_t graph, const ConditionalBodies* bodies = nullptr);

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_GRAPH_WALK_H_
