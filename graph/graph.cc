#include "encore/graph/graph.h"

#include "encore/core/cuda_api.h"
#include "encore/core/log.h"

namespace encore {

StatusOr<Graph> Graph::Create() {
  cudaGraph_t g = nullptr;
  ENCORE_CUDA_CALL(GraphCreate, &g, 0);
  return Graph(g);
}

Graph::~Graph() { Reset(); }

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    Reset();
    g_ = o.g_;
    o.g_ = nullptr;
  }
  return *this;
}

void Graph::Reset() {
  if (!g_) return;
  cudaError_t err = cuda().GraphDestroy(g_);
  if (err != cudaSuccess) {
    EventLog().Error("destroy_failed", {{"what", "graph"}, {"error", cudaGetErrorName(err)}});
  }
  g_ = nullptr;
}

StatusOr<size_t> Graph::NodeCount() const {
  size_t n = 0;
  ENCORE_CUDA_CALL(GraphGetNodes, g_, nullptr, &n);
  return n;
}

StatusOr<GraphExec> GraphExec::Instantiate(const Graph& graph, unsigned long long flags) {
  cudaGraphExec_t e = nullptr;
  ENCORE_CUDA_CALL(GraphInstantiate, &e, graph.get(), flags);
  return GraphExec(e);
}

GraphExec::~GraphExec() { Reset(); }

GraphExec& GraphExec::operator=(GraphExec&& o) noexcept {
  if (this != &o) {
    Reset();
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

void GraphExec::Reset() {
  if (!e_) return;
  cudaError_t err = cuda().GraphExecDestroy(e_);
  if (err != cudaSuccess) {
    EventLog().Error("destroy_failed", {{"what", "graph_exec"}, {"error", cudaGetErrorName(err)}});
  }
  e_ = nullptr;
}

Status GraphExec::Launch(cudaStream_t stream) const {
  ENCORE_CUDA_CALL(GraphLaunch, e_, stream);
  return OkStatus();
}

Status GraphExec::Update(const Graph& graph) {
  cudaGraphExecUpdateResultInfo info{};
  cudaError_t err = cuda().GraphExecUpdate(e_, graph.get(), &info);
  if (err == cudaSuccess) return OkStatus();
  // A refused update leaves a sticky-looking error behind in cudart's
  // last-error slot; clear it so the caller's own cudaGetLastError stays clean.
  (void)cudaGetLastError();
  return CudaStatus(err, CudaCallName(CudaCall::kGraphExecUpdate),
                    "update result " + std::to_string(static_cast<int>(info.result)));
}

}  // namespace encore
