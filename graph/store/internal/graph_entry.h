// SPDX-License-Identifier: Apache-2.0
// GraphEntry: what a method keeps for one captured signature. A method given
// as one fn has one piece; a method given as stages has one PieceGraph per
// maximal run of non-eager stages. The pieces share the entry's static
// buffers (the tensors their bodies ran on during the capture).
#ifndef ENCORE_GRAPH_STORE_INTERNAL_GRAPH_ENTRY_H_
#define ENCORE_GRAPH_STORE_INTERNAL_GRAPH_ENTRY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "encore/core/internal/device_state.h"
#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/internal/graph.h"
#include "encore/policy/internal/binding_policy.h"
#include "encore/policy/internal/call_signature.h"
#include "encore/graph/binding/internal/direct_form.h"
#include "encore/graph/binding/internal/staged_form.h"
#include "encore/graph/control/internal/loop_counters.h"

namespace encore {

class EventLog;

// What a replay launches: the executable, and whether it bumps the
// device-check sequence (every staged graph does; a direct one only when its
// body calls Call::Check). Every graph's last node records the completion.
struct BoundExec {
  const GraphExec* exec = nullptr;
  bool bumps_sequence = true;
  // A Bind of the same addresses returns this executable again with no
  // work (VariantCache::Settled): the replay path may hold it.
  bool settled = false;
};

// How a piece's graph reaches the caller's buffers (the choice, and why),
// the parameter words and endpoints bound to them, and whether binding=auto
// judges the choice again once replays show whether addresses recur.
struct PieceBinding : BindingChoice {
  PieceBinding& operator=(BindingChoice choice) {
    BindingChoice::operator=(std::move(choice));
    return *this;
  }
  int64_t rebind_sites = 0;
  // binding=auto chose direct for a graph whose replays may rewrite many
  // nodes: judged again once its replays show whether addresses recur.
  bool auto_rejudge = false;
};

// A piece's references to the old storage of constants that moved, found
// in each of its forms (PieceGraph::FindConstants).
struct PieceRebind {
  ScanResult direct;
  ScanResult staged;
};

// One piece's graph: staged, and its direct form when bound directly.
struct PieceGraph {
  // Null when the piece runs its stages eagerly (its capture failed, with
  // `eager_reason`).
  bool graphed = false;
  std::string eager_reason;
  StagedForm staged;
  std::unique_ptr<DirectForm> direct;
  size_t nodes = 0;  // of the staged graph
  // The graph's last node records the completion (MethodInfo::PieceRecords).
  bool records = false;
  // Device state the piece's shims advance on every launch.
  std::vector<DeviceStateRegion> device_states;
  PieceBinding binding;
  int64_t replays = 0;
  // The body used Call::If or Call::While: the graph holds conditional
  // nodes (CUDA cannot clone it, instantiate it twice or update it in
  // place), and its loops' counters live as long as it does.
  bool conditional = false;
  std::unique_ptr<LoopCounters> loop_counters;
  // What Call::KeepWithGraph kept during this piece's capture.
  std::vector<std::shared_ptr<void>> kept;

  size_t graph_nodes() const { return direct ? direct->nodes() : nodes; }
  // Drops the direct form: the graph is staged from now on, with `reason`.
  void UseStagedBinding(std::string reason);
  // The executable for these caller tensors: the direct form's unless it
  // cannot take them, then the staged graph's. `log` and `method` name the
  // method when the direct form's rewrite is refused (logged once).
  StatusOr<BoundExec> Bind(Args inputs, Args outputs, int64_t* new_variants, const EventLog& log,
                           const std::string& method, const CallSignature& signature);
  // What Bind just returned for these tensors when it would return it again
  // with no work (the replay path holds it); nothing otherwise. Changes
  // nothing.
  std::optional<BoundExec> Held(Args inputs, Args outputs) const;
  // Constants that moved (Method::RebindConstants): the graph's references
  // into their `old_storage` (named by `names`), changing nothing, and in
  // `*why` why they cannot all be rewritten (empty when they can): a
  // staged graph, whose body no probe showed the scan sees whole, or what
  // the direct form's scan could not read or rewrite. `staying`: the
  // listed constants that did not move (ScanOptions::staying).
  PieceRebind FindConstants(Args old_storage, std::span<const std::string> names, Args staying,
                            std::string* why) const;
  // Points them at `to` (the new addresses, in old_storage's order) in both
  // forms and all their executables.
  Status RebindConstants(PieceRebind found, const Addresses& to);
};

struct GraphEntry {
  uint64_t id = 0;  // the arena's capture id
  CallSignature signature;
  std::vector<TensorRef> static_inputs;
  std::vector<TensorRef> static_outputs;
  std::vector<PieceGraph> pieces;
  // Launches of this signature's graphs, the capture's included
  // (verification checks the first few of every graph).
  int64_t launches = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_STORE_INTERNAL_GRAPH_ENTRY_H_
