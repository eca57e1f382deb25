// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/store/internal/graph_entry.h"

#include <utility>

#include "encore/core/internal/log.h"

namespace encore {

void PieceGraph::UseStagedBinding(std::string reason) {
  direct.reset();
  binding.rebind_sites = 0;
  binding.auto_rejudge = false;
  binding = BindingChoice{Binding::kStaged, std::move(reason)};
}

StatusOr<BoundExec> PieceGraph::Bind(Args inputs, Args outputs, int64_t* new_variants, const EventLog& log,
                                     const std::string& method, const CallSignature& signature) {
  if (direct) {
    StatusOr<const GraphExec*> d = direct->Bind(inputs, outputs, new_variants);
    if (d.ok() && *d != nullptr) return BoundExec{*d, direct->bumps_sequence(), direct->settled()};
    // CUDA refused to point a node at these buffers (a memcpy endpoint in
    // pinned-host or managed memory): the staged graph, whose kernels copy
    // them in and out, answers the call, as it does overlapping tensors.
    if (!d.ok() && direct->refused_rewrites() == 1) {
      log.Warn("direct_rewrite_refused", {{"method", method},
                                          {"signature", signature.ToString()},
                                          {"error", d.status().message()},
                                          {"detail", "answered by the staged graph, as are later calls with these "
                                                     "addresses; logged once per graph"}});
    }
  }
  if (staged.variants().empty()) {
    // Bound directly from its capture on, the graph made no staged
    // executable until a call needed one.
    ENCORE_RETURN_IF_ERROR(staged.InstantiateFirst());
    if (new_variants != nullptr) ++*new_variants;
  }
  ENCORE_ASSIGN_OR_RETURN(StagedForm::Cache::Variant * v,
                          staged.variants().Bind(inputs, outputs, staged, new_variants));
  return BoundExec{&v->exec, true, staged.variants().Settled()};
}

std::optional<BoundExec> PieceGraph::Held(Args inputs, Args outputs) const {
  // Bind answers from the direct form when it took these addresses, else
  // from the staged graph (Bind's order).
  if (direct) {
    if (const GraphExec* e = direct->Held(inputs, outputs)) return BoundExec{e, direct->bumps_sequence(), true};
  }
  if (const StagedForm::Cache::Variant* v = staged.variants().Held(inputs, outputs)) return BoundExec{&v->exec, true, true};
  return std::nullopt;
}

PieceRebind PieceGraph::FindConstants(Args old_storage, std::span<const std::string> names, Args staying,
                                      std::string* why) const {
  PieceRebind found;
  if (!graphed) return found;  // its stages run eagerly, on the constants as listed now
  if (!direct) {
    // Note [Rebinding needs a direct form]: the probe of a direct form ran
    // its body with every buffer it was bound to poisoned, which shows its
    // nodes reach memory through the words the scan reads. A staged graph
    // (padded, copy_outputs=false, a failed probe, conditional nodes) has
    // no such evidence: a pointer to a constant kept in device memory
    // would be missed, so it is captured again instead.
    *why = "a graph is staged (" + binding.reason + ")";
    return found;
  }
  found.direct = direct->FindConstants(old_storage, names, staying);
  if (!found.direct.complete || !found.direct.unsafe.empty()) {
    *why = found.direct.unsafe;
    return found;
  }
  found.staged = staged.FindConstants(old_storage, names, staying);
  if (!found.staged.complete) *why = found.staged.unsafe;
  return found;
}

Status PieceGraph::RebindConstants(PieceRebind found, const Addresses& to) {
  if (!graphed || !direct) return OkStatus();
  ENCORE_RETURN_IF_ERROR(direct->RebindConstants(std::move(found.direct), to));
  return staged.RebindConstants(std::move(found.staged), to);
}

}  // namespace encore
