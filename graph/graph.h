// Graph and GraphExec: move-only owners of a CUDA graph and of its executable.
// Destructors never throw; if CUDA refuses a destroy they log at error.
#ifndef ENCORE_GRAPH_GRAPH_H_
#define ENCORE_GRAPH_GRAPH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "encore/core/status.h"

namespace encore {

class Graph {
 public:
  Graph() = default;
  // Takes ownership of `g`.
  explicit Graph(cudaGraph_t g) : g_(g) {}
  static StatusOr<Graph> Create();
  ~Graph();
  Graph(Graph&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }
  Graph& operator=(Graph&& o) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  cudaGraph_t get() const { return g_; }
  explicit operator bool() const { return g_ != nullptr; }
  StatusOr<size_t> NodeCount() const;

 private:
  void Reset();
  cudaGraph_t g_ = nullptr;
};

class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraphExec_t e) : e_(e) {}
  // Instantiates `graph`. Failures name cudaGraphInstantiateWithFlags.
  static StatusOr<GraphExec> Instantiate(const Graph& graph, unsigned long long flags = 0);
  ~GraphExec();
  GraphExec(GraphExec&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  GraphExec& operator=(GraphExec&& o) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  cudaGraphExec_t get() const { return e_; }
  explicit operator bool() const { return e_ != nullptr; }

  Status Launch(cudaStream_t stream) const;
  // Updates this executable in place to run `graph`. kFailedPrecondition
  // when CUDA refuses the update (a different topology, say); the executable
  // is then unchanged and still runs the graph it ran before.
  Status Update(const Graph& graph);

 private:
  void Reset();
  cudaGraphExec_t e_ = nullptr;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_GRAPH_H_
