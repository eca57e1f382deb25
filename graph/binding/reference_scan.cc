// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/binding/internal/reference_scan.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/internal/graph.h"

namespace encore {
namespace {

// A CUDA failure while scanning is a reason to stage, not an error of the
// call: the staged graph is right either way.
std::string ScanFailed(cudaError_t err, CudaCall call) {
  ClearCudaError();
  return "the reference scan failed (" + std::string(CudaCallName(call)) + ": " + cudaGetErrorName(err) + ")";
}

cudaError_t ParamInfo(const CUDA_KERNEL_NODE_PARAMS& p, size_t i, size_t* offset, size_t* size) {
  return p.func != nullptr ? cuda().DriverFuncGetParamInfo(p.func, i, offset, size)
                           : cuda().DriverKernelGetParamInfo(p.kern, i, offset, size);
}

// Note [A kernel's parameter count]
// A driver of CUDA 13.2 or newer says how many parameters a function takes
// (cuFuncGetParamCount, cuKernelGetParamCount), and the layout is read with
// one cuFuncGetParamInfo per parameter, none failing. Older drivers have no
// such query (core/internal/driver_entry.h: the count call is not even asked
// for), and the only answer they give is cuFuncGetParamInfo failing with an
// invalid value one past the last parameter: that read, asked twice, is two
// API errors under compute-sanitizer per kernel function per process
// (docs/limitations.md), where the scan is the only way to bind a graph to
// the caller's buffers.

// The function's parameter count from the driver, where it can say.
bool ParamCount(const CUDA_KERNEL_NODE_PARAMS& p, size_t* count) {
  const cudaError_t err = p.func != nullptr ? cuda().DriverFuncGetParamCount(p.func, count)
                                            : cuda().DriverKernelGetParamCount(p.kern, count);
  if (err == cudaSuccess) return true;
  if (err != cudaErrorNotSupported) ClearCudaError();
  return false;
}

StatusOr<ParamLayout> ReadLayout(const CUDA_KERNEL_NODE_PARAMS& p) {
  ParamLayout l;
  size_t count = 0;
  const bool counted = ParamCount(p, &count);
  for (size_t i = 0; !counted || i < count; ++i) {
    size_t offset = 0, size = 0;
    cudaError_t err = ParamInfo(p, i, &offset, &size);
    // Without a count, an invalid value past the last parameter ends the
    // list (asked again, the driver says the same: a list cut short would
    // make a rewrite pass the driver fewer arguments than the kernel takes).
    if (!counted && err == cudaErrorInvalidValue && ParamInfo(p, i, &offset, &size) == cudaErrorInvalidValue) {
      ClearCudaError();
      break;
    }
    ENCORE_RETURN_IF_ERROR(CudaResult(err, p.func != nullptr ? CudaCall::kDriverFuncGetParamInfo
                                                              : CudaCall::kDriverKernelGetParamInfo));
    l.offsets.push_back(offset);
    l.sizes.push_back(size);
  }
  return l;
}

}  // namespace

StatusOr<ParamLayout> KernelParamLayout(const CUDA_KERNEL_NODE_PARAMS& p) {
  // Keyed by the function handle: a function keeps its handle, and its
  // layout, while its module is loaded, and a graph that launches it keeps
  // that module loaded.
  static std::mutex mu;
  static std::map<const void*, ParamLayout> layouts;
  const void* key = p.func != nullptr ? static_cast<const void*>(p.func) : static_cast<const void*>(p.kern);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = layouts.find(key); it != layouts.end()) return it->second;
  }
  ENCORE_ASSIGN_OR_RETURN(ParamLayout l, ReadLayout(p));
  std::lock_guard<std::mutex> lock(mu);
  return layouts.emplace(key, std::move(l)).first->second;
}

ReferenceScan::ReferenceScan(Args static_inputs, Args static_outputs) : num_inputs_(static_inputs.size()) {
  for (Args refs : {static_inputs, static_outputs}) {
    for (const TensorRef& t : refs) ranges_.push_back(Range{reinterpret_cast<uintptr_t>(t.data), t.span_bytes()});
  }
  r_.referenced.assign(ranges_.size(), false);
}

ScanResult ReferenceScan::Run(cudaGraph_t graph, Args static_inputs, Args static_outputs,
                              std::span<const cudaGraphNode_t> skip, const ConditionalBodies* bodies,
                              const ScanOptions* options) {
  ReferenceScan scan(static_inputs, static_outputs);
  scan.bodies_ = bodies;
  scan.options_ = options;
  if (Status s = scan.Scan(graph, /*in_child=*/false, skip); !s.ok()) {
    scan.Unread("the reference scan failed (" + std::string(s.message()) + ")");
  }
  return std::move(scan.r_);
}

void ReferenceScan::Unsafe(std::string why) {
  if (r_.unsafe.empty()) r_.unsafe = std::move(why);
}

void ReferenceScan::Unread(std::string why) {
  r_.complete = false;
  Unsafe(std::move(why));
}

const KernelSite* ReferenceScan::KnownKernel(cudaGraphNode_t node) const {
  if (options_ == nullptr) return nullptr;
  for (const KernelSite& k : options_->known_kernels) {
    if (k.node == node) return &k;
  }
  return nullptr;
}

bool ReferenceScan::KnownEndpoint(cudaGraphNode_t node, int side) const {
  if (options_ == nullptr) return false;
  for (const EndpointSite& e : options_->known_endpoints) {
    if (e.node == node && e.tensor[side] >= 0) return true;
  }
  return false;
}

std::string ReferenceScan::TensorName(int tensor) const {
  if (options_ != nullptr && static_cast<size_t>(tensor) < options_->names.size()) {
    return "constant '" + options_->names[tensor] + "'";
  }
  return static_cast<size_t>(tensor) < num_inputs_ ? "input " + std::to_string(tensor)
                                                   : "output " + std::to_string(tensor - num_inputs_);
}

Status ReferenceScan::Scan(cudaGraph_t g, bool in_child, std::span<const cudaGraphNode_t> skip) {
  ENCORE_ASSIGN_OR_RETURN(std::vector<cudaGraphNode_t> nodes, GraphNodes(g));
  for (cudaGraphNode_t n : nodes) {
    if (std::find(skip.begin(), skip.end(), n) != skip.end()) continue;
    ++r_.nodes;
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
        ENCORE_RETURN_IF_ERROR(Scan(child, /*in_child=*/true, {}));
        break;
      }
      case cudaGraphNodeTypeEmpty:
      case cudaGraphNodeTypeWaitEvent:
      case cudaGraphNodeTypeEventRecord:
      case cudaGraphNodeTypeHost:
        break;  // these name no tensor memory a replay could move
#if CUDART_VERSION >= 12030
      case cudaGraphNodeTypeConditional:
        ENCORE_RETURN_IF_ERROR(ScanConditional(n));
        break;
#endif
      case cudaGraphNodeTypeMemAlloc:
      case cudaGraphNodeTypeMemFree:
        // Nor do these, but they allow one executable, and cudaGraphClone
        // refuses such a graph (cudaErrorNotSupported): it is not asked.
        r_.has_memory_nodes = true;
        Unsafe("the graph holds memory allocation or free nodes (cudaMallocAsync or cudaFreeAsync in the body), "
               "which CUDA cannot clone into a direct form");
        break;
      default:
        Unread("the graph holds a node of type " + std::to_string(static_cast<int>(type)) +
               " whose references encore cannot scan");
        break;
    }
  }
  return OkStatus();
}

Status ReferenceScan::ScanConditional(cudaGraphNode_t node) {
  r_.has_conditionals = true;
  Unsafe("the graph holds conditional nodes (Call::If, Call::While), which CUDA cannot clone into a direct form");
  const std::vector<cudaGraph_t>* bodies = bodies_ != nullptr ? bodies_->Find(node) : nullptr;
  if (bodies == nullptr) {
    Unread("a conditional node whose bodies encore did not record");
    return OkStatus();
  }
  for (cudaGraph_t body : *bodies) ENCORE_RETURN_IF_ERROR(Scan(body, /*in_child=*/true, {}));
  return OkStatus();
}

Status ReferenceScan::ScanKernel(cudaGraphNode_t node, bool in_child) {
  KernelSite k;
  k.node = node;
  if (cudaError_t err = cuda().DriverGraphKernelNodeGetParams(node, &k.params); err != cudaSuccess) {
    Unread(ScanFailed(err, CudaCall::kDriverGraphKernelNodeGetParams));
    return OkStatus();
  }
  if (k.params.func == nullptr && k.params.kern == nullptr) {
    Unread("a kernel node names no function encore can ask for its parameters");
    return OkStatus();
  }
  if (k.params.extra != nullptr ? !ReadPackedParams(k) : !ReadParamList(k)) return OkStatus();
  const KernelSite* known = KnownKernel(node);
  auto known_word = [known](size_t w) {
    return known != nullptr &&
           std::any_of(known->refs.begin(), known->refs.end(), [w](const WordRef& r) { return r.offset == w; });
  };
  for (size_t w = 0; w + 8 <= k.args.size() * 8; w += 8) {
    if (known_word(w)) continue;
    uint64_t delta = 0;
    const uintptr_t word = static_cast<uintptr_t>(k.args[w / 8]);
    const int t = FindTensor(word, &delta);
    if (t >= 0) k.refs.push_back(WordRef{w, t, delta});
    if (int end = EndOf(word); t < 0 && end >= 0 && !Stays(word)) {
      r_.referenced[end] = true;
      Unsafe("a kernel parameter points one past the end of " + TensorName(end) +
             " (an end pointer), which encore does not rebind");
    }
  }
  if (k.refs.empty()) return OkStatus();
  for (const WordRef& ref : k.refs) r_.referenced[ref.tensor] = true;
  if (in_child) {
    Unsafe("a kernel inside a child graph refers to " + TensorName(k.refs[0].tensor) +
           "; nodes of child graphs are not rewritten");
    return OkStatus();
  }
  r_.sites += static_cast<int64_t>(k.refs.size());
  r_.kernels.push_back(std::move(k));
  return OkStatus();
}

bool ReferenceScan::ReadPackedParams(KernelSite& k) {
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
    Unread("a kernel node passes its parameters in a form encore cannot read ('extra' without a packed buffer)");
    return false;
  }
  k.packed_bytes = size;
  k.args.assign((size + 7) / 8, 0);
  std::memcpy(k.args.data(), buffer, size);
  return true;
}

bool ReferenceScan::ReadParamList(KernelSite& k) {
  StatusOr<ParamLayout> layout = KernelParamLayout(k.params);
  if (!layout.ok()) {
    Unread("the reference scan failed (" + std::string(layout.status().message()) + ")");
    return false;
  }
  size_t total = 0;
  for (size_t i = 0; i < layout->sizes.size(); ++i) total = std::max(total, layout->offsets[i] + layout->sizes[i]);
  k.offsets = layout->offsets;
  k.args.assign((total + 7) / 8, 0);
  auto* bytes = reinterpret_cast<unsigned char*>(k.args.data());
  for (size_t i = 0; i < layout->sizes.size(); ++i) {
    std::memcpy(bytes + k.offsets[i], k.params.kernelParams[i], layout->sizes[i]);
    k.arg_ptrs.push_back(bytes + k.offsets[i]);
  }
  return true;
}

Status ReferenceScan::ScanEndpoints(cudaGraphNode_t node, bool is_memset, bool in_child) {
  EndpointSite e;
  e.node = node;
  e.is_memset = is_memset;
  if (is_memset) {
    ENCORE_CUDA_CALL(GraphMemsetNodeGetParams, node, &e.set);
    if (!KnownEndpoint(node, 1)) e.tensor[1] = FindTensor(reinterpret_cast<uintptr_t>(e.set.dst), &e.delta[1]);
  } else {
    ENCORE_CUDA_CALL(GraphMemcpyNodeGetParams, node, &e.copy);
    if (e.copy.srcArray == nullptr && !KnownEndpoint(node, 0)) {
      e.tensor[0] = FindTensor(reinterpret_cast<uintptr_t>(e.copy.srcPtr.ptr), &e.delta[0]);
    }
    if (e.copy.dstArray == nullptr && !KnownEndpoint(node, 1)) {
      e.tensor[1] = FindTensor(reinterpret_cast<uintptr_t>(e.copy.dstPtr.ptr), &e.delta[1]);
    }
  }
  if (e.tensor[0] < 0 && e.tensor[1] < 0) return OkStatus();
  for (int t : e.tensor) {
    if (t >= 0) r_.referenced[t] = true;
  }
  if (in_child) {
    Unsafe(std::string("a ") + (is_memset ? "memset" : "memcpy") +
           " inside a child graph refers to a tensor; nodes of child graphs are not rewritten");
    return OkStatus();
  }
  for (int t : e.tensor) r_.sites += t >= 0 ? 1 : 0;
  r_.endpoints.push_back(e);
  return OkStatus();
}

int ReferenceScan::FindTensor(uintptr_t w, uint64_t* delta) const {
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

int ReferenceScan::EndOf(uintptr_t w) const {
  for (size_t t = 0; t < ranges_.size(); ++t) {
    if (ranges_[t].bytes > 0 && w == ranges_[t].base + ranges_[t].bytes) return static_cast<int>(t);
  }
  return -1;
}

// Note [An end that is a neighbour's base]
// A rebind scans for the old bytes of constants that moved, which the
// application allocated: not encore's static buffers, one byte longer than
// their tensors so that no buffer's end is another's base. PyTorch's
// caching allocator hands out blocks back to back (512-byte steps), so a
// weight of 16 KiB ends exactly where the next tensor begins, often the
// next listed constant (Linear's bias after its weight). A word there names
// that neighbour: PyTorch's and cuBLAS's kernels take a tensor's base and
// sizes, never its end, and a body whose kernels took end pointers would
// have shown one to an input or output at its capture (the scan of the
// static buffers stages such a graph). So a word inside a listed constant
// that stays where it is is no end pointer of a moved one; one at a moved
// constant's end that names no such memory still refuses the rewrite (the
// graph is captured again).
bool ReferenceScan::Stays(uintptr_t w) const {
  if (options_ == nullptr) return false;
  for (const TensorRef& t : options_->staying) {
    const auto base = reinterpret_cast<uintptr_t>(t.data);
    if (t.span_bytes() > 0 && w >= base && w < base + t.span_bytes()) return true;
  }
  return false;
}

}  // namespace encore
