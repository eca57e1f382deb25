// SPDX-License-Identifier: Apache-2.0
// DirectGraph: the direct form of one captured graph (binding=direct|auto).
// The capture recorded the method's body on encore's static buffers between
// staging nodes; this is a clone of that graph without the staging nodes,
// with every reference its nodes hold to a static buffer found (a kernel
// parameter word, a memcpy or memset endpoint, base or interior pointer), so
// that its executables can be bound to the caller's buffers instead: a
// replay rewrites the nodes whose tensors moved, and none when the caller's
// addresses match one of its executables. Internal to graph/.
//
// What the scan cannot see (a pointer kept in device memory, one split into
// two 32-bit halves) is not found here; the capture's probe (method_binding.cc)
// catches it by poisoning the static buffers, and the graph is staged.
#ifndef ENCORE_GRAPH_DIRECT_GRAPH_H_
#define ENCORE_GRAPH_DIRECT_GRAPH_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/graph.h"
#include "encore/graph/staging.h"
#include "graph/address_set.h"  // private to graph/

namespace encore {

// encore's own nodes in the captured (staged) graph.
struct StagedNodes {
  std::vector<cudaGraphNode_t> heads;  // staging heads, chunk 0 first
  std::vector<cudaGraphNode_t> tails;
  cudaGraphNode_t record = nullptr;  // the completion record
  // The body's last nodes, which the direct graph's completion record follows.
  std::vector<cudaGraphNode_t> body_frontier;
  // Set when the body called Call::Check: the heads stay, copying nothing,
  // and head 0 bumps this device-check sequence (a check in a replay finds
  // its call through it).
  unsigned long long* check_sequence = nullptr;
  cudaKernelNodeParams head_launch{};  // the heads' func, grid and block
};

class DirectGraph {
 public:
  using Args = std::span<const TensorRef>;

  // Clones `staged` without its staging nodes, adds a completion record of
  // `completion` after the body's last nodes (cheaper than a cudaEventRecord
  // after each launch; bench/binding_micro), and scans it for references to
  // `static_inputs` and `static_outputs` (the buffers the body ran on).
  // Never fails: what stops direct binding (a CUDA error included) is
  // unsafe_reason().
  static std::unique_ptr<DirectGraph> Build(const Graph& staged, const StagedNodes& nodes, Args static_inputs,
                                            Args static_outputs, cudaEvent_t completion);
  ~DirectGraph();
  DirectGraph(const DirectGraph&) = delete;
  DirectGraph& operator=(const DirectGraph&) = delete;

  // Why this graph cannot be bound directly, or empty.
  const std::string& unsafe_reason() const { return unsafe_; }
  // Parameter words and endpoints bound to the caller's buffers.
  int64_t sites() const { return sites_; }
  // Nodes a replay rewrites when every caller address moves.
  int64_t rewrite_nodes() const;
  size_t nodes() const { return nodes_; }
  // Whether a launch bumps the device-check sequence (the body checks).
  bool bumps_sequence() const { return bumps_sequence_; }
  // Bind calls, and those that had to rewrite an executable (auto's
  // statistics; the probe's bind counts in neither).
  int64_t binds() const { return binds_; }
  int64_t rewrite_calls() const { return rewrite_calls_; }
  const Graph& graph() const { return graph_; }

  // The first executable, bound to the static buffers.
  Status Instantiate();
  // The executable to launch for these caller buffers, its nodes rewritten
  // where a tensor moved (a new executable for an address set seen twice,
  // counted in *new_variants). Null (not an error) when the caller's tensors
  // overlap, where binding them directly could differ from staging.
  // An error when CUDA refuses a rewrite (a memcpy or memset endpoint in
  // pinned-host or managed memory): that executable is then bound to no
  // address (its next use rewrites every node), and the address set is
  // remembered, so later calls with it get null without asking CUDA again.
  StatusOr<const GraphExec*> Bind(Args inputs, Args outputs, int64_t* new_variants);
  // Bind for the capture's probe, whose buffers are encore's snapshots:
  // the counts and the address sets seen stay as they were, since they
  // judge whether the caller's addresses recur (binding=auto).
  StatusOr<const GraphExec*> BindForProbe(Args inputs, Args outputs);
  // Calls whose rewrite CUDA refused (Bind's error).
  int64_t refused_rewrites() const { return refused_rewrites_; }

 private:
  struct WordRef {
    size_t offset = 0;  // byte offset in the kernel's parameter buffer
    int tensor = 0;     // inputs first, then outputs
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
  struct Variant {
    GraphExec exec;
    std::vector<const void*> bound;  // the caller address each tensor is bound to
    uint64_t key = 0;                // AddressSetKey of `bound`, to find it fast
    int64_t last_use = 0;            // the bind that last chose it
    bool rewritten = false;          // a parameter was rewritten after instantiation
  };
  struct Range {
    uintptr_t base = 0;
    size_t bytes = 0;
  };

  DirectGraph() = default;
  Status CloneWithoutStaging(const Graph& staged, const StagedNodes& nodes, cudaEvent_t completion);
  // Finds the references in `g` (and its child graphs).
  Status Scan(cudaGraph_t g, bool in_child);
  Status ScanKernel(cudaGraphNode_t node, bool in_child);
  // A kernel's parameter bytes into k.args, from its packed buffer or its
  // parameter list; false (with unsafe_ set) when they cannot be read.
  bool ReadPackedParams(KernelSite& k);
  bool ReadParamList(KernelSite& k);
  Status ScanEndpoints(cudaGraphNode_t node, bool is_memset, bool in_child);
  // The tensor one past whose end `w` points, or -1.
  int EndOf(uintptr_t w) const;
  // The tensor whose bytes hold address `w`, or -1.
  int FindTensor(uintptr_t w, uint64_t* delta) const;
  void CheckEveryTensorReferenced(size_t num_inputs);
  const void* Address(int tensor, Args inputs, Args outputs) const {
    return tensor < static_cast<int>(inputs.size()) ? inputs[tensor].data : outputs[tensor - inputs.size()].data;
  }
  bool Matches(const Variant& v, Args inputs, Args outputs) const;
  // The index of the variant bound to these addresses once this returns
  // (found, made, or rewritten), or variants_.size() when staging must
  // answer the call.
  StatusOr<size_t> VariantFor(Args inputs, Args outputs, int64_t* new_variants);
  // A new executable instantiated with these addresses (counted in
  // *new_variants), or variants_.size() at the cap or on failure.
  size_t NewVariant(uint64_t key, Args inputs, Args outputs, int64_t* new_variants);
  size_t VariantToRewrite() const;
  // The variant bound to these addresses, or variants_.size().
  size_t FindVariant(uint64_t key, Args inputs, Args outputs) const;
  Status Rewrite(Variant& v, Args inputs, Args outputs);
  // Writes the caller's addresses into `exec`'s nodes, skipping nodes whose
  // tensors are where `bound` says; with `exec` null, into every node of the
  // graph itself, for the next instantiation.
  Status Write(cudaGraphExec_t exec, const std::vector<const void*>* bound, Args inputs, Args outputs);
  Status WriteKernel(cudaGraphExec_t exec, const std::vector<const void*>* bound, KernelSite& k, Args inputs,
                     Args outputs);
  Status WriteEndpoints(cudaGraphExec_t exec, const std::vector<const void*>* bound, EndpointSite& e, Args inputs,
                        Args outputs);
  std::vector<const void*> Addresses(Args inputs, Args outputs) const;
  std::vector<const void*> StaticAddresses() const;

  Graph graph_;
  std::string unsafe_;
  std::vector<Range> ranges_;  // the static buffers, inputs then outputs
  size_t num_inputs_ = 0;
  std::vector<bool> referenced_;
  std::vector<KernelSite> kernels_;
  std::vector<EndpointSite> endpoints_;
  int64_t sites_ = 0;
  size_t nodes_ = 0;
  bool bumps_sequence_ = false;
  int64_t binds_ = 0;
  std::vector<Variant> variants_;
  size_t mru_ = 0;  // the variant the last bind chose
  int64_t rewrite_calls_ = 0;  // binds that rewrote an executable (not the probe's)
  size_t max_variants_ = 1;
  bool has_memory_nodes_ = false;
  MissRing missed_;
  // Address sets whose rewrite CUDA refused: the staged graph answers them.
  MissRing refused_;
  int64_t refused_rewrites_ = 0;
};

// Whether every non-empty tensor starts on the 256-byte boundary the static
// buffers, and so the captured kernels, had.
bool AlignedLikeStatic(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs);
// Whether any two of the caller's tensors share a byte (empty ones never do).
bool TensorsOverlap(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs);

}  // namespace encore

#endif  // ENCORE_GRAPH_DIRECT_GRAPH_H_
