// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/binding/internal/direct_form.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "encore/allocator/internal/graph_arena.h"
#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/policy/internal/binding_policy.h"
#include "encore/graph/binding/internal/site_write.h"
#include "encore/graph/binding/internal/staging.h"
#include "encore/graph/internal/lap.h"

namespace encore {

std::vector<cudaGraphNode_t> StagedNodes::all() const {
  std::vector<cudaGraphNode_t> n = heads;
  n.insert(n.end(), tails.begin(), tails.end());
  if (record != nullptr) n.push_back(record);
  return n;
}

bool AlignedLikeStatic(Args inputs, Args outputs) {
  uintptr_t bits = 0;
  for (Args refs : {inputs, outputs}) {
    for (const TensorRef& t : refs) bits |= t.span_bytes() > 0 ? reinterpret_cast<uintptr_t>(t.data) : 0;
  }
  return bits % GraphArena::kAlignment == 0;
}

bool TensorsOverlap(Args inputs, Args outputs) {
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  for (Args refs : {inputs, outputs}) {
    for (const TensorRef& t : refs) {
      const size_t bytes = t.span_bytes();
      const auto base = reinterpret_cast<uintptr_t>(t.data);
      if (bytes > 0) spans.emplace_back(base, base + bytes);
    }
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) return true;
  }
  return false;
}

DirectForm::~DirectForm() = default;

StatusOr<std::unique_ptr<DirectForm>> DirectForm::Build(const Graph& staged, const StagedNodes& nodes, ScanResult scan,
                                                        Addresses static_addresses, cudaEvent_t completion,
                                                        std::span<const CopiedInput> copied) {
  std::unique_ptr<DirectForm> d(new DirectForm());
  d->static_ = std::move(static_addresses);
  d->bumps_sequence_ = nodes.check_sequence != nullptr;
  d->has_memory_nodes_ = scan.has_memory_nodes;
  d->sites_ = scan.sites;
  d->rewrites_.referenced = std::move(scan.referenced);
  d->rewrites_.kernels = std::move(scan.kernels);
  d->rewrites_.endpoints = std::move(scan.endpoints);
  ENCORE_RETURN_IF_ERROR(d->Clone(staged, nodes, completion));
  ENCORE_RETURN_IF_ERROR(d->AddInputCopies(copied));
  ENCORE_ASSIGN_OR_RETURN(d->nodes_, d->graph_.NodeCount());
  // A graph with memory nodes can have one live executable only.
  d->variants_ = Cache(d->has_memory_nodes_ ? 1 : MaxExecVariants(d->nodes_));
  return d;
}

Status DirectForm::Clone(const Graph& staged, const StagedNodes& nodes, cudaEvent_t completion) {
  auto t = std::chrono::steady_clock::now();
  cudaGraph_t clone = nullptr;
  ENCORE_CUDA_CALL(GraphClone, &clone, staged.get());
  graph_ = Graph(clone);
  clone_us_ = Lap(&t);
  auto in_clone = [&](cudaGraphNode_t n) -> StatusOr<cudaGraphNode_t> {
    cudaGraphNode_t c = nullptr;
    ENCORE_CUDA_CALL(GraphNodeFindInClone, &c, n, clone);
    return c;
  };
  // The sites name the clone's nodes from now on.
  for (KernelSite& k : rewrites_.kernels) {
    ENCORE_ASSIGN_OR_RETURN(k.node, in_clone(k.node));
  }
  for (EndpointSite& e : rewrites_.endpoints) {
    ENCORE_ASSIGN_OR_RETURN(e.node, in_clone(e.node));
  }
  std::vector<cudaGraphNode_t> removed = nodes.tails;
  if (nodes.record != nullptr) removed.push_back(nodes.record);
  if (nodes.check_sequence == nullptr) removed.insert(removed.end(), nodes.heads.begin(), nodes.heads.end());
  for (cudaGraphNode_t n : removed) {
    ENCORE_ASSIGN_OR_RETURN(cudaGraphNode_t c, in_clone(n));
    ENCORE_CUDA_CALL(GraphDestroyNode, c);
  }
  for (size_t i = 0; nodes.check_sequence != nullptr && i < nodes.heads.size(); ++i) {
    // The body checks on the device: its heads stay, copying nothing, so a
    // check still runs after head 0 has bumped the sequence.
    StagingParams p{};
    p.sequence = i == 0 ? nodes.check_sequence : nullptr;
    void* args[] = {&p};
    cudaKernelNodeParams k = nodes.head_launch;
    k.kernelParams = args;
    k.extra = nullptr;
    ENCORE_ASSIGN_OR_RETURN(cudaGraphNode_t c, in_clone(nodes.heads[i]));
    ENCORE_CUDA_CALL(GraphKernelNodeSetParams, c, &k);
  }
  return completion != nullptr ? AddCompletion(nodes, removed, completion) : OkStatus();
}

Status DirectForm::AddCompletion(const StagedNodes& nodes, const std::vector<cudaGraphNode_t>& removed,
                                 cudaEvent_t completion) {
  cudaGraph_t clone = graph_.get();
  // A completion record of its own, after the body's last nodes.
  std::vector<cudaGraphNode_t> frontier;
  for (cudaGraphNode_t n : nodes.body_frontier) {
    if (std::find(removed.begin(), removed.end(), n) != removed.end()) continue;
    cudaGraphNode_t c = nullptr;
    ENCORE_CUDA_CALL(GraphNodeFindInClone, &c, n, clone);
    frontier.push_back(c);
  }
  size_t count = 0;
  ENCORE_CUDA_CALL(GraphGetNodes, clone, nullptr, &count);
  if (frontier.empty() && count > 0) {
    // A record with no dependency would fire as the launch starts, and a
    // later call on another stream would not wait for the body.
    return InternalError("no body frontier was recorded for the completion record");
  }
  cudaGraphNode_t record = nullptr;
  ENCORE_CUDA_CALL(GraphAddEventRecordNode, &record, clone, frontier.data(), frontier.size(), completion);
  return OkStatus();
}

// Note [Inputs no node names]
// A body may take an input and never name it in a node: it reaches it
// through device memory (a pointer table it built), or it does not read it
// at all (transformers 5 takes a Llama decode step's `cache_position` and
// computes positions from its StaticCache's own counters; seen on an H100).
// Bound directly, such a body would read the static buffer the capture ran
// on, never the caller's input. Staging the whole graph for it was right
// but cost the direct form, and with it every constant rebind (a staged
// graph has no probe's evidence: Note [Rebinding needs a direct form]), so
// an RL loop's weight sync captured again. Instead the direct form copies
// each such input into its static buffer before the body's first nodes:
// one memcpy node whose source is bound to the caller's input, as any
// endpoint is, and whose destination stays the static buffer. Whether the
// body reads it or not, it reads the caller's values; the probe, which
// poisons the static buffers, sees them overwritten by the copy first, so
// a body that uses such an input as an index never reads poison, and does
// not take the copy's write for a reference the scan missed
// (Probe::StaticsWritten). Only a method given as one fn copies: a piece of
// a longer one leaves most of the method's inputs to other pieces.
Status DirectForm::AddInputCopies(std::span<const CopiedInput> copied) {
  if (copied.empty()) return OkStatus();
  cudaGraph_t g = graph_.get();
  size_t count = 0;
  ENCORE_CUDA_CALL(GraphGetRootNodes, g, nullptr, &count);
  std::vector<cudaGraphNode_t> roots(count);
  if (count > 0) ENCORE_CUDA_CALL(GraphGetRootNodes, g, roots.data(), &count);
  roots.resize(count);
  if (roots.empty()) return OkStatus();  // no body node to read them
  for (const CopiedInput& c : copied) {
    void* buffer = const_cast<void*>(static_[c.tensor]);
    cudaGraphNode_t node = nullptr;
    ENCORE_CUDA_CALL(GraphAddMemcpyNode1D, &node, g, nullptr, 0, buffer, buffer, c.bytes, cudaMemcpyDeviceToDevice);
    for (cudaGraphNode_t root : roots) ENCORE_CUDA_CALL(GraphAddDependencies, g, &node, &root, 1);
    EndpointSite e;
    e.node = node;
    ENCORE_CUDA_CALL(GraphMemcpyNodeGetParams, node, &e.copy);
    e.tensor = {c.tensor, -1};  // the source follows the caller; the destination stays
    rewrites_.endpoints.push_back(e);
    rewrites_.copied.push_back(c.tensor);
    ++sites_;
  }
  return OkStatus();
}

Status DirectForm::InstantiateFirst() {
  ENCORE_ASSIGN_OR_RETURN(GraphExec exec, GraphExec::Instantiate(graph_));
  // Note [Memcpy nodes keep their memory's owner]
  // CUDA documents that it rewrites a memcpy or memset node of an
  // executable (cudaGraphExecMemcpyNodeSetParams,
  // cudaGraphExecMemsetNodeSetParams) only to memory "allocated from the
  // same contexts as the original". This executable's endpoints are the
  // static buffers, in the graph arena's slabs (memory mapped into a
  // reserved range: SlabMemory); on an H100 with driver 580 every rewrite
  // of them to the probe's snapshots or a caller's tensors answered
  // cudaErrorInvalidValue once the slabs became mapped memory, and those
  // bindings fell back to staging. Yet a memcpy node of a graph captured
  // on its own from mapped memory was rewritten to cudaMalloc'd memory
  // without complaint on the same card, so what the driver objects to in
  // this executable is not pinned down. So no endpoint of it is rewritten:
  // the first rewrite that moves one instantiates the graph again with the
  // new addresses written into its nodes (a graph's own nodes take any
  // memory) and that executable replaces this one; executables made so
  // were rewritten on that card (binding_gpu_test, cublas_binding_gpu_test).
  if (!rewrites_.endpoints.empty() && !has_memory_nodes_) on_statics_ = exec.get();
  variants_.Add(std::move(exec), static_);
  return OkStatus();
}

bool DirectForm::Accepts(Args inputs, Args outputs, uint64_t key) {
  // Overlapping tensors bound in place could read what the graph wrote,
  // and a kernel chosen at capture for the static buffers' 256-byte
  // alignment may need it (vector loads): staging answers those calls, and
  // those whose buffers CUDA refused to bind before.
  return !TensorsOverlap(inputs, outputs) && AlignedLikeStatic(inputs, outputs) &&
         !(refused_.calls > 0 && refused_.sets.Holds(key));
}

StatusOr<GraphExec> DirectForm::Instantiate(const Addresses& to) {
  // The graph's own parameters matter to nothing else once the first
  // executable exists.
  ENCORE_RETURN_IF_ERROR(Write(nullptr, nullptr, to));
  return GraphExec::Instantiate(graph_);
}

bool DirectForm::MovesAnEndpoint(const Addresses& bound, const Addresses& to) const {
  for (const EndpointSite& e : rewrites_.endpoints) {
    for (int t : e.tensor) {
      if (t >= 0 && bound[t] != to[t]) return true;
    }
  }
  return false;
}

Status DirectForm::Reinstantiate(Cache::Variant& v, const Addresses& to) {
  ENCORE_ASSIGN_OR_RETURN(GraphExec exec, Instantiate(to));
  // One that is still running (the capture's first launch) is freed by CUDA
  // when it completes.
  v.exec = std::move(exec);
  v.rewritten = false;
  on_statics_ = nullptr;
  ++reinstantiations_;
  return OkStatus();
}

Status DirectForm::Rewrite(Cache::Variant& v, const Addresses& to, uint64_t key) {
  Status s;
  if (on_statics_ != nullptr && v.exec.get() == on_statics_ && MovesAnEndpoint(v.bound, to)) {
    s = Reinstantiate(v, to);  // Note [Memcpy nodes keep their memory's owner]
  } else {
    v.rewritten = true;
    s = Write(v.exec.get(), &v.bound, to);
  }
  if (!s.ok()) {
    // CUDA will refuse these buffers again: asking it on every call would
    // cost a failed rewrite (and, for a recurring set, an executable).
    ++refused_.calls;
    (void)refused_.sets.Recurs(key);
  }
  return s;
}

StatusOr<const GraphExec*> DirectForm::Bind(Args inputs, Args outputs, int64_t* new_variants) {
  ENCORE_ASSIGN_OR_RETURN(Cache::Variant* v, variants_.Bind(inputs, outputs, *this, new_variants));
  return v != nullptr ? &v->exec : nullptr;
}

StatusOr<const GraphExec*> DirectForm::BindForProbe(Args inputs, Args outputs) {
  const Refused refused = refused_;
  StatusOr<Cache::Variant*> v = variants_.Bind(inputs, outputs, *this, nullptr, /*counted=*/false);
  refused_ = refused;
  if (!v.ok()) return v.status();
  return *v != nullptr ? &(*v)->exec : nullptr;
}

Status DirectForm::Write(cudaGraphExec_t exec, const Addresses* bound, const Addresses& to) {
  for (KernelSite& k : rewrites_.kernels) ENCORE_RETURN_IF_ERROR(WriteKernel(exec, bound, k, to));
  for (EndpointSite& e : rewrites_.endpoints) ENCORE_RETURN_IF_ERROR(WriteEndpoints(exec, bound, e, to));
  return OkStatus();
}

Status DirectForm::WriteKernel(cudaGraphExec_t exec, const Addresses* bound, KernelSite& k, const Addresses& to) {
  bool moved = bound == nullptr;
  for (const WordRef& r : k.refs) moved |= !moved && (*bound)[r.tensor] != to[r.tensor];
  return moved ? WriteKernelSite(exec, k, to) : OkStatus();
}

Status DirectForm::WriteEndpoints(cudaGraphExec_t exec, const Addresses* bound, EndpointSite& e,
                                  const Addresses& to) {
  bool moved = bound == nullptr;
  for (int t : e.tensor) moved |= !moved && t >= 0 && (*bound)[t] != to[t];
  return moved ? WriteEndpointSite(exec, e, to) : OkStatus();
}

}  // namespace encore
