// SPDX-License-Identifier: Apache-2.0
#include "graph/direct_graph.h"  // private to graph/

#include <algorithm>
#include <cstring>
#include <utility>

#include "encore/core/cuda_api.h"
#include "encore/allocator/graph_arena.h"
#include "encore/core/cuda_error.h"
#include "encore/policy/binding_policy.h"
#include "graph/address_set.h"  // private to graph/

namespace encore {
namespace {

std::string TensorName(int tensor, size_t num_inputs) {
  return tensor < static_cast<int>(num_inputs) ? "input " + std::to_string(tensor)
                                               : "output " + std::to_string(tensor - num_inputs);
}

// A CUDA failure while building the direct form is a reason to stage, not
// an error of the call: the staged graph is right either way.
std::string Unsafe(cudaError_t err, CudaCall call) {
  (void)cuda().GetLastError();
  return "the reference scan failed (" + std::string(CudaCallName(call)) + ": " + cudaGetErrorName(err) + ")";
}

StatusOr<std::vector<cudaGraphNode_t>> Nodes(cudaGraph_t g) {
  size_t n = 0;
  ENCORE_CUDA_CALL(GraphGetNodes, g, nullptr, &n);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) ENCORE_CUDA_CALL(GraphGetNodes, g, nodes.data(), &n);
  nodes.resize(n);
  return nodes;
}

}  // namespace

bool AlignedLikeStatic(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  uintptr_t bits = 0;
  for (auto refs : {inputs, outputs}) {
    for (const TensorRef& t : refs) bits |= t.span_bytes() > 0 ? reinterpret_cast<uintptr_t>(t.data) : 0;
  }
  return bits % GraphArena::kAlignment == 0;
}

bool TensorsOverlap(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  for (auto refs : {inputs, outputs}) {
    for (const TensorRef& t : refs) {
      const size_t bytes = t.span_bytes();
      if (bytes > 0) spans.emplace_back(reinterpret_cast<uintptr_t>(t.data), reinterpret_cast<uintptr_t>(t.data) + bytes);
    }
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) return true;
  }
  return false;
}

DirectGraph::~DirectGraph() = default;

std::unique_ptr<DirectGraph> DirectGraph::Build(const Graph& staged, const StagedNodes& nodes, Args static_inputs,
                                                Args static_outputs, cudaEvent_t completion) {
  std::unique_ptr<DirectGraph> d(new DirectGraph());
  for (auto refs : {static_inputs, static_outputs}) {
    for (const TensorRef& t : refs) d->ranges_.push_back(Range{reinterpret_cast<uintptr_t>(t.data), t.span_bytes()});
  }
  d->num_inputs_ = static_inputs.size();
  d->bumps_sequence_ = nodes.check_sequence != nullptr;
  d->referenced_.assign(d->ranges_.size(), false);
  Status s = d->CloneWithoutStaging(staged, nodes, completion);
  if (s.ok()) s = d->Scan(d->graph_.get(), /*in_child=*/false);
  if (!s.ok() && d->unsafe_.empty()) d->unsafe_ = "the reference scan failed (" + std::string(s.message()) + ")";
  if (d->unsafe_.empty()) d->CheckEveryTensorReferenced(d->num_inputs_);
  if (StatusOr<size_t> n = d->graph_ ? d->graph_.NodeCount() : StatusOr<size_t>(0); n.ok()) d->nodes_ = *n;
  // A graph with memory nodes can have one live executable only.
  d->max_variants_ = d->has_memory_nodes_ ? 1 : MaxExecVariants(d->nodes_);
  return d;
}

Status DirectGraph::CloneWithoutStaging(const Graph& staged, const StagedNodes& nodes, cudaEvent_t completion) {
  cudaGraph_t clone = nullptr;
  ENCORE_CUDA_CALL(GraphClone, &clone, staged.get());
  graph_ = Graph(clone);
  auto in_clone = [&](cudaGraphNode_t n) -> StatusOr<cudaGraphNode_t> {
    cudaGraphNode_t c = nullptr;
    ENCORE_CUDA_CALL(GraphNodeFindInClone, &c, n, clone);
    return c;
  };
  std::vector<cudaGraphNode_t> removed = nodes.tails;
  removed.push_back(nodes.record);
  if (nodes.check_sequence == nullptr) removed.insert(removed.end(), nodes.heads.begin(), nodes.heads.end());
  for (cudaGraphNode_t n : removed) {
    ENCORE_ASSIGN_OR_RETURN(cudaGraphNode_t c, in_clone(n));
    ENCORE_CUDA_CALL(GraphDestroyNode, c);
  }
  if (nodes.check_sequence != nullptr) {
    // The body checks on the device: its heads stay, copying nothing, so a
    // check still runs after head 0 has bumped the sequence.
    for (size_t i = 0; i < nodes.heads.size(); ++i) {
      StageParams p{};
      p.sequence = i == 0 ? nodes.check_sequence : nullptr;
      void* args[] = {&p};
      cudaKernelNodeParams k = nodes.head_launch;
      k.kernelParams = args;
      k.extra = nullptr;
      ENCORE_ASSIGN_OR_RETURN(cudaGraphNode_t c, in_clone(nodes.heads[i]));
      ENCORE_CUDA_CALL(GraphKernelNodeSetParams, c, &k);
    }
  }
  // A completion record of its own, after the body's last nodes (never less
  // than a cudaEventRecord after each launch costs; docs/design.md).
  std::vector<cudaGraphNode_t> frontier;
  for (cudaGraphNode_t n : nodes.body_frontier) {
    if (std::find(removed.begin(), removed.end(), n) != removed.end()) continue;
    ENCORE_ASSIGN_OR_RETURN(cudaGraphNode_t c, in_clone(n));
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

Status DirectGraph::Scan(cudaGraph_t g, bool in_child) {
  ENCORE_ASSIGN_OR_RETURN(std::vector<cudaGraphNode_t> nodes, Nodes(g));
  for (cudaGraphNode_t n : nodes) {
    if (!unsafe_.empty()) return OkStatus();
    cudaGraphNodeType type{};
    ENCORE_CUDA_CALL(GraphNodeGetType, n, &type);
    switch (type) {
      case cudaGraphNodeTypeKernel:
        ENCORE_RETURN_IF_ERROR(ScanKernel(n, in_child));
        break;
      case cudaGraphNodeTypeMemcpy:
      case cudaGraphNodeTypeMemset:
        ENCORE_RETURN_IF_ERROR(ScanEndpoints(n, type == cudaGraphNodeTypeMemset, in_child));
        break;
      case cudaGraphNodeTypeGraph: {
        cudaGraph_t child = nullptr;
        ENCORE_CUDA_CALL(GraphChildGraphNodeGetGraph, n, &child);
        ENCORE_RETURN_IF_ERROR(Scan(child, /*in_child=*/true));
        break;
      }
      case cudaGraphNodeTypeEmpty:
      case cudaGraphNodeTypeWaitEvent:
      case cudaGraphNodeTypeEventRecord:
      case cudaGraphNodeTypeHost:
        break;  // these name no tensor memory a replay could move
      case cudaGraphNodeTypeMemAlloc:
      case cudaGraphNodeTypeMemFree:
        has_memory_nodes_ = true;  // nor do these, but they allow one executable
        break;
      default:
        unsafe_ = "the graph holds a node of type " + std::to_string(static_cast<int>(type)) +
                  " whose references encore cannot scan";
        return OkStatus();
    }
  }
  return OkStatus();
}

Status DirectGraph::ScanKernel(cudaGraphNode_t node, bool in_child) {
  KernelSite k;
  k.node = node;
  if (cudaError_t err = cuda().DriverGraphKernelNodeGetParams(node, &k.params); err != cudaSuccess) {
    unsafe_ = Unsafe(err, CudaCall::kDriverGraphKernelNodeGetParams);
    return OkStatus();
  }
  if (k.params.func == nullptr && k.params.kern == nullptr) {
    unsafe_ = "a kernel node names no function encore can ask for its parameters";
    return OkStatus();
  }
  if (k.params.extra != nullptr) {
    if (!ReadPackedParams(k)) return OkStatus();
  } else if (!ReadParamList(k)) {
    return OkStatus();
  }
  // A pointer in a parameter (or inside a struct parameter) is 8-byte
  // aligned in the parameter buffer.
  for (size_t w = 0; w + 8 <= k.args.size() * 8; w += 8) {
    uint64_t delta = 0;
    const uintptr_t word = static_cast<uintptr_t>(k.args[w / 8]);
    const int t = FindTensor(word, &delta);
    if (t >= 0) k.refs.push_back(WordRef{w, t, delta});
    if (int end = EndOf(word); t < 0 && end >= 0) {
      unsafe_ = "a kernel parameter points one past the end of " + TensorName(end, num_inputs_) +
                " (an end pointer), which encore does not rebind";
      return OkStatus();
    }
  }
  if (k.refs.empty()) return OkStatus();
  if (in_child) {
    unsafe_ = "a kernel inside a child graph refers to " + TensorName(k.refs[0].tensor, num_inputs_) +
              "; nodes of child graphs are not rewritten";
    return OkStatus();
  }
  for (const WordRef& r : k.refs) referenced_[r.tensor] = true;
  sites_ += static_cast<int64_t>(k.refs.size());
  kernels_.push_back(std::move(k));
  return OkStatus();
}

bool DirectGraph::ReadPackedParams(KernelSite& k) {
  // cuBLAS's Hopper GEMMs, among others, launch with one packed parameter
  // buffer: CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs, then _END.
  const void* buffer = nullptr;
  size_t size = 0;
  bool known = true;
  for (void* const* e = k.params.extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = e[1];
    } else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = *static_cast<const size_t*>(e[1]);
    } else {
      known = false;
      break;
    }
  }
  if (!known || buffer == nullptr || k.params.kernelParams != nullptr) {
    unsafe_ = "a kernel node passes its parameters in a form encore cannot read ('extra' without a packed buffer)";
    return false;
  }
  k.packed_bytes = size;
  k.args.assign((size + 7) / 8, 0);
  std::memcpy(k.args.data(), buffer, size);
  return true;
}

bool DirectGraph::ReadParamList(KernelSite& k) {
  std::vector<size_t> sizes;
  auto param_info = [&k](size_t i, size_t* offset, size_t* size) {
    return k.params.func != nullptr ? cuda().DriverFuncGetParamInfo(k.params.func, i, offset, size)
                                    : cuda().DriverKernelGetParamInfo(k.params.kern, i, offset, size);
  };
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    cudaError_t err = param_info(i, &offset, &size);
    // An invalid value past the last parameter ends the list; asked again,
    // the driver says the same. A list cut short would make a rewrite pass
    // the driver fewer arguments than the kernel takes.
    if (err == cudaErrorInvalidValue && param_info(i, &offset, &size) == cudaErrorInvalidValue) break;
    if (err != cudaSuccess) {
      unsafe_ = Unsafe(err, k.params.func != nullptr ? CudaCall::kDriverFuncGetParamInfo
                                                      : CudaCall::kDriverKernelGetParamInfo);
      return false;
    }
    k.offsets.push_back(offset);
    sizes.push_back(size);
  }
  size_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) total = std::max(total, k.offsets[i] + sizes[i]);
  k.args.assign((total + 7) / 8, 0);
  auto* bytes = reinterpret_cast<unsigned char*>(k.args.data());
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::memcpy(bytes + k.offsets[i], k.params.kernelParams[i], sizes[i]);
    k.arg_ptrs.push_back(bytes + k.offsets[i]);
  }
  return true;
}

Status DirectGraph::ScanEndpoints(cudaGraphNode_t node, bool is_memset, bool in_child) {
  EndpointSite e;
  e.node = node;
  e.is_memset = is_memset;
  if (is_memset) {
    ENCORE_CUDA_CALL(GraphMemsetNodeGetParams, node, &e.set);
    e.tensor[1] = FindTensor(reinterpret_cast<uintptr_t>(e.set.dst), &e.delta[1]);
  } else {
    ENCORE_CUDA_CALL(GraphMemcpyNodeGetParams, node, &e.copy);
    if (e.copy.srcArray == nullptr) e.tensor[0] = FindTensor(reinterpret_cast<uintptr_t>(e.copy.srcPtr.ptr), &e.delta[0]);
    if (e.copy.dstArray == nullptr) e.tensor[1] = FindTensor(reinterpret_cast<uintptr_t>(e.copy.dstPtr.ptr), &e.delta[1]);
  }
  if (e.tensor[0] < 0 && e.tensor[1] < 0) return OkStatus();
  if (in_child) {
    unsafe_ = std::string("a ") + (is_memset ? "memset" : "memcpy") +
              " inside a child graph refers to a tensor; nodes of child graphs are not rewritten";
    return OkStatus();
  }
  for (int t : e.tensor) {
    if (t >= 0) {
      referenced_[t] = true;
      ++sites_;
    }
  }
  endpoints_.push_back(e);
  return OkStatus();
}

int DirectGraph::FindTensor(uintptr_t w, uint64_t* delta) const {
  // Inside a tensor's bytes only: one past a tensor's end is often the next
  // allocation's base (another static buffer, the body's scratch), and an
  // end pointer left unbound is caught by the probe.
  for (size_t t = 0; t < ranges_.size(); ++t) {
    const Range& r = ranges_[t];
    if (r.bytes > 0 && w >= r.base && w < r.base + r.bytes) {
      *delta = w - r.base;
      return static_cast<int>(t);
    }
  }
  return -1;
}

int DirectGraph::EndOf(uintptr_t w) const {
  for (size_t t = 0; t < ranges_.size(); ++t) {
    if (ranges_[t].bytes > 0 && w == ranges_[t].base + ranges_[t].bytes) return static_cast<int>(t);
  }
  return -1;
}

void DirectGraph::CheckEveryTensorReferenced(size_t num_inputs) {
  for (size_t t = 0; t < ranges_.size(); ++t) {
    if (ranges_[t].bytes > 0 && !referenced_[t]) {
      unsafe_ = TensorName(static_cast<int>(t), num_inputs) +
                " is referenced by no kernel parameter, memcpy or memset (the body may reach it through device "
                "memory, or not use it)";
      return;
    }
  }
}

int64_t DirectGraph::rewrite_nodes() const { return static_cast<int64_t>(kernels_.size() + endpoints_.size()); }

std::vector<const void*> DirectGraph::StaticAddresses() const {
  std::vector<const void*> a;
  for (const Range& r : ranges_) a.push_back(reinterpret_cast<const void*>(r.base));
  return a;
}

Status DirectGraph::Instantiate() {
  ENCORE_ASSIGN_OR_RETURN(GraphExec exec, GraphExec::Instantiate(graph_));
  std::vector<const void*> bound = StaticAddresses();
  const uint64_t key = AddressKey(bound);
  variants_.push_back(Variant{std::move(exec), std::move(bound), key});
  mru_ = 0;
  return OkStatus();
}

bool DirectGraph::Matches(const Variant& v, Args inputs, Args outputs) const {
  size_t t = 0;
  for (const TensorRef& r : inputs) {
    if (v.bound[t++] != r.data) return false;
  }
  for (const TensorRef& r : outputs) {
    if (v.bound[t++] != r.data) return false;
  }
  return true;
}

size_t DirectGraph::NewVariant(uint64_t key, Args inputs, Args outputs, int64_t* new_variants) {
  if (variants_.size() >= max_variants_) return variants_.size();
  // Instantiated from the graph with these addresses written in, rather
  // than rewritten after: on an H200 an executable of 128 kernels that had
  // a parameter rewritten ran 1.2-1.3x slower end to end from then on
  // (bench/binding_micro). The graph's own parameters matter to nothing
  // else once the first executable exists.
  const Status written = Write(nullptr, nullptr, inputs, outputs);
  StatusOr<GraphExec> exec = written.ok() ? GraphExec::Instantiate(graph_) : StatusOr<GraphExec>(written);
  if (!exec.ok()) {
    max_variants_ = variants_.size();  // not again on every call
    return variants_.size();
  }
  variants_.push_back(Variant{*std::move(exec), Addresses(inputs, outputs), key});
  ++*new_variants;
  return variants_.size() - 1;
}

size_t DirectGraph::VariantToRewrite() const {
  // The least recently used of the executables rewritten before (they are
  // slower already), else of all.
  size_t pick = variants_.size();
  for (bool rewritten_only : {true, false}) {
    for (size_t i = 0; i < variants_.size(); ++i) {
      if (rewritten_only && !variants_[i].rewritten) continue;
      if (pick == variants_.size() || variants_[i].last_use < variants_[pick].last_use) pick = i;
    }
    if (pick < variants_.size()) return pick;
  }
  return 0;
}

size_t DirectGraph::FindVariant(uint64_t key, Args inputs, Args outputs) const {
  // From the one after the last call's: callers that rotate buffers come
  // back in the order their executables were made, so the first look hits.
  return FindFrom(mru_ + 1, variants_.size(), [&](size_t i) {
    return variants_[i].key == key && Matches(variants_[i], inputs, outputs);
  });
}

StatusOr<size_t> DirectGraph::VariantFor(Args inputs, Args outputs, int64_t* new_variants) {
  const uint64_t key = AddressSetKey(inputs, outputs);
  size_t vi = FindVariant(key, inputs, outputs);
  if (vi < variants_.size()) {
    if (!variants_[vi].rewritten) return vi;
    // A set that recurs, answered by a rewritten executable: it earns a
    // clean one, and the rewritten one is left for sets seen once.
    const size_t clean = NewVariant(key, inputs, outputs, new_variants);
    if (clean == variants_.size()) return vi;
    variants_[vi].key = 0;
    std::fill(variants_[vi].bound.begin(), variants_[vi].bound.end(), nullptr);
    return clean;
  }
  // Overlapping tensors bound in place could read what the graph wrote,
  // and a kernel chosen at capture for the static buffers' 256-byte
  // alignment may need it (vector loads): staging answers those calls, and
  // those whose buffers CUDA refused to bind before.
  if (TensorsOverlap(inputs, outputs) || !AlignedLikeStatic(inputs, outputs) ||
      (refused_rewrites_ > 0 && refused_.Holds(key))) {
    return variants_.size();
  }
  // As in ExecCache: an address set seen twice earns its own executable;
  // a set seen once rewrites one.
  const bool recurring = missed_.Recurs(key);
  vi = recurring ? NewVariant(key, inputs, outputs, new_variants) : variants_.size();
  if (vi == variants_.size()) {
    ++rewrite_calls_;
    vi = VariantToRewrite();
    if (Status s = Rewrite(variants_[vi], inputs, outputs); !s.ok()) {
      // CUDA will refuse these buffers again: asking it on every call would
      // cost a failed rewrite (and, for a recurring set, an executable).
      ++refused_rewrites_;
      (void)refused_.Recurs(key);
      return s;
    }
  }
  return vi;
}

StatusOr<const GraphExec*> DirectGraph::Bind(Args inputs, Args outputs, int64_t* new_variants) {
  ++binds_;
  // The hot path: the same addresses as the last call, on an executable
  // never rewritten (or no room for a clean one).
  const Variant& last = variants_[mru_];
  if (!Matches(last, inputs, outputs) || (last.rewritten && variants_.size() < max_variants_)) {
    ENCORE_ASSIGN_OR_RETURN(size_t vi, VariantFor(inputs, outputs, new_variants));
    if (vi == variants_.size()) return static_cast<const GraphExec*>(nullptr);
    mru_ = vi;
  }
  variants_[mru_].last_use = binds_;
  return &variants_[mru_].exec;
}

std::vector<const void*> DirectGraph::Addresses(Args inputs, Args outputs) const {
  std::vector<const void*> a;
  for (size_t t = 0; t < ranges_.size(); ++t) a.push_back(Address(static_cast<int>(t), inputs, outputs));
  return a;
}

StatusOr<const GraphExec*> DirectGraph::BindForProbe(Args inputs, Args outputs) {
  // The snapshots are freed after the probe and never the caller's: counted,
  // they would tell binding=auto that one more call had new addresses.
  const int64_t binds = binds_, rewrite_calls = rewrite_calls_, refused_rewrites = refused_rewrites_;
  const MissRing missed = missed_, refused = refused_;
  int64_t new_variants = 0;
  StatusOr<const GraphExec*> exec = Bind(inputs, outputs, &new_variants);
  binds_ = binds;
  rewrite_calls_ = rewrite_calls;
  refused_rewrites_ = refused_rewrites;
  missed_ = missed;
  refused_ = refused;
  return exec;
}

Status DirectGraph::Rewrite(Variant& v, Args inputs, Args outputs) {
  v.rewritten = true;
  const Status s = Write(v.exec.get(), &v.bound, inputs, outputs);
  // After a failure, nothing is trusted: the next call rewrites every node.
  v.bound = s.ok() ? Addresses(inputs, outputs) : std::vector<const void*>(v.bound.size(), nullptr);
  v.key = s.ok() ? AddressKey(v.bound) : 0;
  return s;
}

Status DirectGraph::Write(cudaGraphExec_t exec, const std::vector<const void*>* bound, Args inputs, Args outputs) {
  for (KernelSite& k : kernels_) ENCORE_RETURN_IF_ERROR(WriteKernel(exec, bound, k, inputs, outputs));
  for (EndpointSite& e : endpoints_) ENCORE_RETURN_IF_ERROR(WriteEndpoints(exec, bound, e, inputs, outputs));
  return OkStatus();
}

Status DirectGraph::WriteKernel(cudaGraphExec_t exec, const std::vector<const void*>* bound, KernelSite& k,
                                Args inputs, Args outputs) {
  bool moved = bound == nullptr;
  for (const WordRef& r : k.refs) moved |= !moved && (*bound)[r.tensor] != Address(r.tensor, inputs, outputs);
  if (!moved) return OkStatus();
  // Every word of the node, not only the moved ones: the parameter buffer
  // last held another executable's addresses.
  for (const WordRef& r : k.refs) {
    k.args[r.offset / 8] = reinterpret_cast<uintptr_t>(Address(r.tensor, inputs, outputs)) + r.delta;
  }
  CUDA_KERNEL_NODE_PARAMS p = k.params;
  size_t packed_bytes = k.packed_bytes;
  void* packed[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, k.args.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_bytes,
                    CU_LAUNCH_PARAM_END};
  p.kernelParams = k.packed_bytes > 0 ? nullptr : k.arg_ptrs.data();
  p.extra = k.packed_bytes > 0 ? packed : nullptr;
  if (exec == nullptr) {
    ENCORE_CUDA_CALL(DriverGraphKernelNodeSetParams, k.node, &p);
  } else {
    ENCORE_CUDA_CALL(DriverGraphExecKernelNodeSetParams, exec, k.node, &p);
  }
  return OkStatus();
}

Status DirectGraph::WriteEndpoints(cudaGraphExec_t exec, const std::vector<const void*>* bound, EndpointSite& e,
                                   Args inputs, Args outputs) {
  bool moved = bound == nullptr;
  for (int t : e.tensor) moved |= !moved && t >= 0 && (*bound)[t] != Address(t, inputs, outputs);
  if (!moved) return OkStatus();
  auto at = [&](int i) {
    return static_cast<char*>(const_cast<void*>(Address(e.tensor[i], inputs, outputs))) + e.delta[i];
  };
  if (e.is_memset) {
    e.set.dst = at(1);
    if (exec == nullptr) {
      ENCORE_CUDA_CALL(GraphMemsetNodeSetParams, e.node, &e.set);
    } else {
      ENCORE_CUDA_CALL(GraphExecMemsetNodeSetParams, exec, e.node, &e.set);
    }
    return OkStatus();
  }
  if (e.tensor[0] >= 0) e.copy.srcPtr.ptr = at(0);
  if (e.tensor[1] >= 0) e.copy.dstPtr.ptr = at(1);
  if (exec == nullptr) {
    ENCORE_CUDA_CALL(GraphMemcpyNodeSetParams, e.node, &e.copy);
  } else {
    ENCORE_CUDA_CALL(GraphExecMemcpyNodeSetParams, exec, e.node, &e.copy);
  }
  return OkStatus();
}

}  // namespace encore
