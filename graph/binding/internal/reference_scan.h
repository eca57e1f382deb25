// SPDX-License-Identifier: Apache-2.0
// ReferenceScan: where the nodes of a captured graph refer to the buffers
// its body ran on (encore's static buffers): every 8-byte-aligned word of a
// kernel's parameter buffer (pointers are 8-byte aligned, also inside
// structs) that points into one, and every memcpy or memset endpoint. Base
// and interior pointers both count, with their offset from the tensor's
// base, so slices are rebound.
//
// The capture runs it on every staged graph (encore's own nodes skipped):
// an output that no node refers to is how a body that launched its work on a
// stream it never joined shows up. The direct form binds the sites it finds.
// What it cannot see (a pointer kept in device memory, one split into two
// 32-bit halves) the capture's probe catches.
#ifndef ENCORE_GRAPH_BINDING_INTERNAL_REFERENCE_SCAN_H_
#define ENCORE_GRAPH_BINDING_INTERNAL_REFERENCE_SCAN_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/binding/internal/address_set.h"
#include "encore/graph/control/internal/graph_walk.h"

namespace encore {

struct WordRef {
  size_t offset = 0;   // byte offset in the kernel's parameter buffer
  int tensor = 0;      // inputs first, then outputs
  uint64_t delta = 0;  // bytes from the tensor's base
};

struct KernelSite {
  cudaGraphNode_t node = nullptr;
  CUDA_KERNEL_NODE_PARAMS params{};
  std::vector<uint64_t> args;    // the parameter buffer, 8-byte aligned
  std::vector<size_t> offsets;   // each parameter's offset in `args`
  std::vector<void*> arg_ptrs;   // kernelParams for a rewrite
  size_t packed_bytes = 0;       // launched with one packed buffer ('extra') of this size
  std::vector<WordRef> refs;
};

struct EndpointSite {  // a memcpy or memset node
  cudaGraphNode_t node = nullptr;
  bool is_memset = false;
  cudaMemcpy3DParms copy{};
  cudaMemsetParams set{};
  std::array<int, 2> tensor{-1, -1};  // memcpy: src, dst; memset: dst in [1]
  std::array<uint64_t, 2> delta{};
};

struct ScanResult {
  std::vector<KernelSite> kernels;
  std::vector<EndpointSite> endpoints;
  std::vector<bool> referenced;  // per tensor: some node refers to it
  int64_t sites = 0;             // words and endpoints that refer to a tensor
  int64_t nodes = 0;             // nodes scanned (skipped ones not counted)
  bool has_memory_nodes = false;
  bool has_conditionals = false;
  // Every node's references were read (else `referenced` may miss some).
  bool complete = true;
  // Why the sites cannot be bound directly (a reference the scan cannot
  // rewrite, a node it cannot read, a failed CUDA call), or empty.
  std::string unsafe;
};

// A scan for other memory than the buffers a body ran on (the old storage
// of constants that moved, Method::RebindConstants).
struct ScanOptions {
  // Sites already known to name the caller's tensors (a direct form's):
  // their words and endpoints hold the caller's addresses and are skipped.
  std::span<const KernelSite> known_kernels;
  std::span<const EndpointSite> known_endpoints;
  // What the reasons call each range (inputs, then outputs); empty:
  // "input N", "output N".
  std::span<const std::string> names;
  // Memory that stays where it is (the listed constants that did not
  // move): a word inside it names that memory, never the end of a range it
  // adjoins. Note [An end that is a neighbour's base] in reference_scan.cc.
  Args staying;
};

class ReferenceScan {
 public:
  // Scans `graph` (child graphs included) for references to the static
  // buffers, skipping `skip` (encore's own nodes). Never fails: a CUDA
  // error is a reason in `unsafe`, since the staged graph is right either way.
  // `bodies`: the body graphs of the conditional nodes the capture made
  // (their nodes' references count; they are not rewritten).
  static ScanResult Run(cudaGraph_t graph, Args static_inputs, Args static_outputs,
                        std::span<const cudaGraphNode_t> skip, const ConditionalBodies* bodies = nullptr,
                        const ScanOptions* options = nullptr);

 private:
  ReferenceScan(Args static_inputs, Args static_outputs);
  // The known site of `node`'s parameters (ScanOptions), or null; whether
  // its endpoint `side` (0 source, 1 destination) is a known site.
  const KernelSite* KnownKernel(cudaGraphNode_t node) const;
  bool KnownEndpoint(cudaGraphNode_t node, int side) const;
  Status Scan(cudaGraph_t g, bool in_child, std::span<const cudaGraphNode_t> skip);
  Status ScanConditional(cudaGraphNode_t node);
  Status ScanKernel(cudaGraphNode_t node, bool in_child);
  bool ReadPackedParams(KernelSite& k);
  bool ReadParamList(KernelSite& k);
  Status ScanEndpoints(cudaGraphNode_t node, bool is_memset, bool in_child);
  // The tensor whose bytes hold address `w` (and its offset), or -1.
  int FindTensor(uintptr_t w, uint64_t* delta) const;
  // The tensor one past whose end `w` points, or -1.
  int EndOf(uintptr_t w) const;
  // Whether `w` lies inside ScanOptions::staying.
  bool Stays(uintptr_t w) const;
  std::string TensorName(int tensor) const;
  // Keeps the first reason the sites cannot be bound; the scan goes on, so
  // `referenced` covers every node it can read.
  void Unsafe(std::string why);
  // A node whose references could not be read.
  void Unread(std::string why);

  struct Range {
    uintptr_t base = 0;
    size_t bytes = 0;
  };
  std::vector<Range> ranges_;  // inputs then outputs
  const ConditionalBodies* bodies_ = nullptr;
  const ScanOptions* options_ = nullptr;
  size_t num_inputs_ = 0;
  ScanResult r_;
};

// A kernel function's parameter layout (offset, size of each), read from
// the driver once per function and kept: reading it asks the driver once
// per parameter, and, where the driver has no parameter-count query (before
// CUDA 13.2), past the last, which fails by design (Note [A kernel's
// parameter count] in reference_scan.cc).
struct ParamLayout {
  std::vector<size_t> offsets;
  std::vector<size_t> sizes;
};
StatusOr<ParamLayout> KernelParamLayout(const CUDA_KERNEL_NODE_PARAMS& params);

}  // namespace encore

#endif  // ENCORE_GRAPH_BINDING_INTERNAL_REFERENCE_SCAN_H_
