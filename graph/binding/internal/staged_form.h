// SPDX-License-Identifier: Apache-2.0
// StagedForm: a captured graph whose body ran on encore's static buffers,
// with staging kernel nodes of encore's around it (graph/binding/
// internal/staging.h): heads that copy the caller's tensors in and publish
// the caller's output addresses, tails that copy the outputs back out. Its
// executables differ only in the heads' caller addresses, so a replay whose
// addresses moved rewrites at most one node per eight tensors.
#ifndef ENCORE_GRAPH_BINDING_INTERNAL_STAGED_FORM_H_
#define ENCORE_GRAPH_BINDING_INTERNAL_STAGED_FORM_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/internal/graph.h"
#include "encore/graph/binding/internal/address_set.h"
#include "encore/graph/binding/internal/reference_scan.h"
#include "encore/graph/binding/internal/staging.h"
#include "encore/graph/binding/internal/variant_cache.h"

namespace encore {

class StreamCapture;

// One head staging node: its node in the captured graph, its launch
// (function, grid, block, read after the capture) and parameters, and which
// caller tensor (inputs first, then outputs) each copy reads and each
// published address names.
struct HeadNode {
  cudaGraphNode_t node = nullptr;
  cudaKernelNodeParams launch{};
  StagingParams params{};
  std::array<int, StagingParams::kMaxCopies> copy_tensor{};
  std::array<int, StagingParams::kMaxCopies> publish_tensor{};
};

// Padded graphs (on_new_shape=pad): the rows ring, and the device words
// heads and tails share; the tensors seen at the bucket's batch.
struct PaddedStaging {
  PadRowsShared* rows = nullptr;
  uint64_t* launch_slot = nullptr;
  uint64_t* out_bytes = nullptr;
  Args graph_inputs;
  Args graph_outputs;
};

// What the staging nodes of one capture copy, and where.
struct StagingPlan {
  Args inputs;           // the caller's tensors
  Args outputs;
  Args static_inputs;    // the graph's buffers for them
  Args static_outputs;
  bool outputs_in = false;  // heads also copy the caller's outputs in (data an earlier stage left)
  bool copy_out = true;     // heads publish, tails copy the outputs out (copy_outputs)
  void** out_table = nullptr;                // where heads publish the caller's output addresses
  unsigned long long* sequence = nullptr;    // head 0 bumps it (device checks); may be null
  PaddedStaging pad;                         // padded graphs only
};

// An executable made by rewriting another graph's executable in place
// (cudaGraphExecUpdate) keeps naming that graph's nodes in rewrites.
struct StagedExtra {
  std::shared_ptr<Graph> source;
  std::vector<cudaGraphNode_t> heads;
};

class StagedForm : public VariantForm<GraphExec, StagedExtra> {
 public:
  using Cache = VariantCache<GraphExec, StagedExtra>;

  // During the capture: the head nodes (always at least one: head 0 bumps
  // the check sequence), recorded on cap's stream.
  Status AddHeads(const StagingPlan& plan, StreamCapture& cap, cudaStream_t stream);
  // The tail nodes (at least one for a padded graph: its last counts the
  // launch). Their nodes are appended to `nodes`.
  Status AddTails(const StagingPlan& plan, StreamCapture& cap, cudaStream_t stream,
                  std::vector<cudaGraphNode_t>* nodes);
  // After the capture: each head's launch as the graph holds it.
  Status ReadLaunches();
  // After ReadLaunches: heads also copy these caller tensors (outputs no
  // node of the body refers to) into their static buffers, so one the body
  // leaves as it is comes back unchanged. False when the heads have no room
  // (eight copies each): nothing changed.
  StatusOr<bool> AddRoundTrips(const std::vector<int>& tensors, const StagingPlan& plan);

  const std::vector<HeadNode>& heads() const { return heads_; }
  std::vector<cudaGraphNode_t> head_nodes() const;
  // The first executable, and later ones; the graph they are made from.
  void SetGraph(std::shared_ptr<Graph> graph) { graph_ = std::move(graph); }
  const std::shared_ptr<Graph>& graph() const { return graph_; }
  Cache& variants() { return variants_; }
  const Cache& variants() const { return variants_; }
  void set_max_variants(size_t n) { variants_ = Cache(n); }
  // The caller's addresses as the captured heads hold them (the capture
  // call's): what the first executable is bound to.
  Addresses CapturedAddresses() const;
  // The first executable, bound to CapturedAddresses(), unless one exists.
  // Under direct binding the capture makes none (the direct form's serves
  // its first launch, LaunchHeads and LaunchTails around it); a call the
  // direct form declines, or a piece the probe stages, needs it.
  Status InstantiateFirst();
  // The heads and the tails as the capture recorded them, launched on
  // `stream` as kernels: around an executable of the body's own nodes on the
  // static buffers they do the staged graph's work, node for node. Not for
  // a padded graph. `body_bumps_sequence`: the body keeps a head of its own
  // that bumps the check sequence, so these heads do not.
  // `*bumped`: a head that bumps the check sequence was launched.
  Status LaunchHeads(bool body_bumps_sequence, cudaStream_t stream, bool* bumped) const;
  Status LaunchTails(cudaStream_t stream) const;

  // --- constants that moved (Method::RebindConstants; constant_rebind.cc)
  // The graph's references into `old_storage` (the moved constants' old
  // bytes, named by `names`), the heads skipped; changes nothing. Under
  // direct binding the direct form's scan of the same body says whether
  // they can all be rewritten. `staying`: as DirectForm::FindConstants.
  ScanResult FindConstants(Args old_storage, std::span<const std::string> names, Args staying) const;
  // Points them at `to` in the graph and in every executable. Executables
  // updated in place from another graph name that graph's nodes: they are
  // all dropped instead, and a first executable made again.
  Status RebindConstants(ScanResult found, const Addresses& to);

  bool Accepts(Args, Args, uint64_t) override { return true; }
  StatusOr<GraphExec> Instantiate(const Addresses& to) override;
  Status Rewrite(Cache::Variant& v, const Addresses& to, uint64_t key) override;

 private:
  // The head's parameters with the caller's addresses `to`.
  StagingParams ParamsFor(const HeadNode& h, const Addresses& to) const;
  std::vector<HeadNode> heads_;
  std::vector<StagingParams> tails_;  // the tail nodes' parameters, as recorded
  std::shared_ptr<Graph> graph_;
  size_t num_tensors_ = 0;
  Cache variants_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_BINDING_INTERNAL_STAGED_FORM_H_
