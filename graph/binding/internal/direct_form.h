// SPDX-License-Identifier: Apache-2.0
// DirectForm: the direct form of one captured graph (binding=direct|auto).
// The capture recorded the method's body on encore's static buffers between
// staging nodes; this is a clone of that graph without them, whose nodes'
// references to the static buffers (ReferenceScan's sites) are bound to the
// caller's buffers instead: an executable per recurring address set
// (VariantCache), rewritten nodes for a set seen once.
#ifndef ENCORE_GRAPH_BINDING_INTERNAL_DIRECT_FORM_H_
#define ENCORE_GRAPH_BINDING_INTERNAL_DIRECT_FORM_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/internal/graph.h"
#include "encore/graph/binding/internal/address_set.h"
#include "encore/graph/binding/internal/reference_scan.h"
#include "encore/graph/binding/internal/variant_cache.h"

namespace encore {

// encore's own nodes in the captured (staged) graph.
struct StagedNodes {
  std::vector<cudaGraphNode_t> heads;  // staging heads, head 0 first
  std::vector<cudaGraphNode_t> tails;
  cudaGraphNode_t record = nullptr;  // the completion record
  // The body's last nodes, which the direct graph's completion record follows.
  std::vector<cudaGraphNode_t> body_frontier;
  // Set when the body called Call::Check: the heads stay, copying nothing,
  // and head 0 bumps this device-check sequence (a check in a replay finds
  // its call through it).
  unsigned long long* check_sequence = nullptr;
  cudaKernelNodeParams head_launch{};  // the heads' func, grid and block
  // Every one of encore's nodes, for the scan to skip.
  std::vector<cudaGraphNode_t> all() const;
};

// An input no node of the body names (ReferenceScan found no word or
// endpoint of it): the direct form copies it into its static buffer first,
// where the body may read it through device memory (Note [Inputs no node
// names], direct_form.cc).
struct CopiedInput {
  int tensor = 0;    // its index among the inputs
  size_t bytes = 0;  // its span
};

class DirectForm : public VariantForm<GraphExec, std::monostate> {
 public:
  using Cache = VariantCache<GraphExec, std::monostate>;

  // Clones `staged` without its staging nodes, adds a completion record of
  // `completion` (unless null) after the body's last nodes, and takes the scan's sites
  // (found in `staged`) over to the clone. `static_addresses`: the buffers
  // the body ran on, inputs then outputs.
  // `copied`: the inputs it copies into their static buffers before the
  // body (bound to the caller's input like any endpoint).
  static StatusOr<std::unique_ptr<DirectForm>> Build(const Graph& staged, const StagedNodes& nodes, ScanResult scan,
                                                     Addresses static_addresses, cudaEvent_t completion,
                                                     std::span<const CopiedInput> copied);
  ~DirectForm();
  DirectForm(const DirectForm&) = delete;
  DirectForm& operator=(const DirectForm&) = delete;

  int64_t sites() const { return sites_; }
  // Nodes a replay rewrites when every caller address moves.
  int64_t rewrite_nodes() const { return static_cast<int64_t>(rewrites_.kernels.size() + rewrites_.endpoints.size()); }
  size_t nodes() const { return nodes_; }
  bool bumps_sequence() const { return bumps_sequence_; }
  // Per tensor (inputs, then outputs): whether some node of it names it.
  bool names(size_t tensor) const { return tensor < rewrites_.referenced.size() && rewrites_.referenced[tensor]; }
  const Graph& graph() const { return graph_; }
  // The inputs it copies into their static buffers before the body.
  bool copies(size_t input) const {
    for (int t : rewrites_.copied) {
      if (static_cast<size_t>(t) == input) return true;
    }
    return false;
  }
  // What cudaGraphClone alone took in Build, microseconds (capture_phases).
  double clone_us() const { return clone_us_; }
  // Bind calls, and those that had to rewrite an executable (auto's
  // statistics; the probe's bind counts in neither).
  int64_t binds() const { return variants_.binds(); }
  int64_t rewrite_calls() const { return variants_.rewrite_calls(); }
  // Calls whose rewrite CUDA refused.
  int64_t refused_rewrites() const { return refused_.calls; }
  // Executables instantiated to replace the first one instead of rewriting
  // its memcpy and memset nodes (Note [Memcpy nodes keep their memory's
  // owner], direct_form.cc) since the last call; counted once.
  int64_t TakeReinstantiations() { return std::exchange(reinstantiations_, 0); }

  // The first executable, bound to the static buffers.
  Status InstantiateFirst();
  // That executable, until the probe binds it to its snapshots (or, with
  // memcpy or memset nodes, replaces it): with the staged graph's heads and
  // tails around it, the capture's first launch.
  const GraphExec& first_exec() { return variants_.at(0).exec; }
  // The executable to launch for these caller buffers; null (not an error)
  // when the tensors overlap, are not aligned like the static buffers, or
  // CUDA refused to bind this set before: staging answers those. An error
  // when CUDA refuses a rewrite now (a memcpy endpoint in pinned-host or
  // managed memory): the set is remembered.
  StatusOr<const GraphExec*> Bind(Args inputs, Args outputs, int64_t* new_variants);
  // Whether the last Bind's executable is what the same addresses get again
  // with no work (VariantCache::Settled).
  bool settled() const { return variants_.Settled(); }
  // The last Bind's executable when it is bound to these addresses and
  // settled, else null; changes nothing.
  const GraphExec* Held(Args inputs, Args outputs) const {
    const Cache::Variant* v = variants_.Held(inputs, outputs);
    return v != nullptr ? &v->exec : nullptr;
  }
  // Bind for the capture's probe, whose buffers are encore's snapshots: the
  // statistics stay as they were.
  StatusOr<const GraphExec*> BindForProbe(Args inputs, Args outputs);

  // --- constants that moved (Method::RebindConstants; constant_rebind.cc)
  // The graph's references into `old_storage` (the moved constants' old
  // bytes, named by `names`), the words bound to the caller's tensors left
  // out; changes nothing. Its `unsafe` says why not every one can be
  // rewritten (an end pointer, a node of a child graph, one not read).
  // `staying`: the listed constants that did not move (ScanOptions).
  ScanResult FindConstants(Args old_storage, std::span<const std::string> names, Args staying) const;
  // Points what FindConstants found at `to` (the constants' new addresses,
  // in its order): in the graph, for executables made later, and in every
  // executable, each keeping its caller's addresses. An executable that is
  // running is not affected; its later launches are.
  Status RebindConstants(ScanResult found, const Addresses& to);

  bool Accepts(Args inputs, Args outputs, uint64_t key) override;
  StatusOr<GraphExec> Instantiate(const Addresses& to) override;
  Status Rewrite(Cache::Variant& v, const Addresses& to, uint64_t key) override;

 private:
  DirectForm() = default;
  // `completion` null: no record node (the pieces of a longer method).
  Status Clone(const Graph& staged, const StagedNodes& nodes, cudaEvent_t completion);
  Status AddCompletion(const StagedNodes& nodes, const std::vector<cudaGraphNode_t>& removed, cudaEvent_t completion);
  Status AddInputCopies(std::span<const CopiedInput> copied);
  // Writes `to` into exec's nodes (with `exec` null, the graph's own nodes)
  // whose tensors are not where `bound` says (with `bound` null, every one).
  Status Write(cudaGraphExec_t exec, const Addresses* bound, const Addresses& to);
  Status WriteKernel(cudaGraphExec_t exec, const Addresses* bound, KernelSite& k, const Addresses& to);
  Status WriteEndpoints(cudaGraphExec_t exec, const Addresses* bound, EndpointSite& e, const Addresses& to);
  // Writes a site of the caller's tensors into the graph and every
  // executable, each with the addresses it is bound to (where it is bound
  // to none, the static buffers').
  template <class Site>
  Status WriteBound(Site& site);
  // Whether `to` moves a memcpy or memset endpoint from where `bound` has it.
  bool MovesAnEndpoint(const Addresses& bound, const Addresses& to) const;
  // Replaces v's executable with one instantiated with `to` written in.
  Status Reinstantiate(Cache::Variant& v, const Addresses& to);

  // Where the caller's addresses go: the scan's kernel parameter words and
  // copy endpoints, and which tensors it found named at all.
  struct Rewrites {
    std::vector<KernelSite> kernels;
    std::vector<EndpointSite> endpoints;
    std::vector<bool> referenced;  // per tensor
    std::vector<int> copied;       // the inputs copied in (CopiedInput::tensor)
  };

  Graph graph_;
  Rewrites rewrites_;
  Addresses static_;
  int64_t sites_ = 0;
  size_t nodes_ = 0;
  bool bumps_sequence_ = false;
  bool has_memory_nodes_ = false;
  Cache variants_;
  // Address sets whose rewrite CUDA refused (the staged graph answers
  // them), and how many calls were refused.
  struct Refused {
    MissRing sets;
    int64_t calls = 0;
  };
  Refused refused_;
  // InstantiateFirst's executable while its memcpy and memset nodes still
  // name the static buffers; null once replaced, or with no such nodes.
  cudaGraphExec_t on_statics_ = nullptr;
  int64_t reinstantiations_ = 0;
  double clone_us_ = 0;
};

// Whether every non-empty tensor starts on the 256-byte boundary the static
// buffers, and so the captured kernels, had.
bool AlignedLikeStatic(Args inputs, Args outputs);
// Whether any two of the caller's tensors share a byte (empty ones never do).
bool TensorsOverlap(Args inputs, Args outputs);

}  // namespace encore

#endif  // ENCORE_GRAPH_BINDING_INTERNAL_DIRECT_FORM_H_
