// SPDX-License-Identifier: Apache-2.0
// The graph-memory budget of MethodInstance (ManagerOptions::
// graph_memory_budget): a capture reserves the arena growth it will cause
// before it begins; when that would take the manager's graph memory over the
// budget, this method's least recently used graphs go first (and the arena
// slabs no kept graph reaches are freed), and if it still does not fit the
// call runs eagerly with the reason over_budget.
#include <algorithm>
#include <string>

#include "graph/method_instance.h"  // private to graph/

namespace encore {

size_t MethodInstance::CaptureReserveBytes(Args graph_inputs, Args graph_outputs) const {
  // Static buffers, the output table, a padded graph's words, and the
  // method's peak eager scratch.
  size_t bytes = arena_.eager_peak_bytes();
  for (const TensorRef& t : graph_inputs) bytes += t.span_bytes() + GraphArena::kAlignment;
  for (const TensorRef& t : graph_outputs) bytes += t.span_bytes() + GraphArena::kAlignment;
  if (flags_.copy_outputs && !graph_outputs.empty()) bytes += graph_outputs.size() * sizeof(void*) + GraphArena::kAlignment;
  if (pad_) bytes += (graph_outputs.size() + 1) * sizeof(uint64_t) + GraphArena::kAlignment;
  return bytes;
}

void MethodInstance::SettleGraphMemory() {
  if (!budget_) return;
  const size_t now = arena_.stats().reserved_bytes;
  budget_->Adjust(static_cast<int64_t>(now) - static_cast<int64_t>(budget_counted_));
  budget_counted_ = now;
}

bool MethodInstance::MakeRoomForCapture(Args graph_inputs, Args graph_outputs, int64_t index) {
  if (!budget_) return true;
  const size_t reserve = CaptureReserveBytes(graph_inputs, graph_outputs);
  // Dropping every graph of this method frees at most all its slabs; when
  // even that would not make room, no graph is dropped for nothing.
  const size_t alone = std::max(reserve, GraphArena::kMinSlabBytes);
  const size_t others = budget_->used() - std::min(budget_->used(), budget_counted_);
  bool could_fit = budget_->limit() == 0 || (alone <= budget_->limit() && others <= budget_->limit() - alone);
  size_t growth = arena_.GrowthForCapture(reserve);
  while (!budget_->TryReserve(growth)) {
    if (!could_fit || cache_.empty()) {
      ++counters_.over_budget_calls;
      if (!over_budget_logged_) {
        over_budget_logged_ = true;
        log_.Warn("over_budget", {{"method", name_},
                                  {"call", index},
                                  {"needed", growth},
                                  {"used", budget_->used()},
                                  {"budget", budget_->limit()},
                                  {"detail", "a new graph would take the manager's graph memory over "
                                             "graph_memory_budget; such calls of this method run eagerly"}});
      }
      return false;
    }
    // The dropped graph may still be running, and its slabs are freed now.
    if (Status s = WaitForLastLaunch(); !s.ok()) {
      log_.Warn("budget_drop_failed", {{"method", name_}, {"error", s.message()}});
      could_fit = false;
      continue;
    }
    cache_.Erase(cache_.size() - 1);
    if (Status s = arena_.TrimUnused(); !s.ok()) {
      log_.Warn("budget_drop_failed", {{"method", name_}, {"error", s.message()}});
    }
    SettleGraphMemory();
    ++counters_.budget_drops;
    log_.Info("budget_drop", {{"method", name_}, {"call", index}, {"graphs_left", cache_.size()},
                              {"graph_memory_bytes", budget_counted_}});
    growth = arena_.GrowthForCapture(reserve);
  }
  budget_counted_ += growth;
  return true;
}

Status MethodInstance::CaptureWithinBudget(Args inputs, Args outputs, cudaStream_t stream, int64_t index,
                                           bool recapture, const PaddedArgs* padded) {
  if (!MakeRoomForCapture(padded ? padded->inputs : inputs, padded ? padded->outputs : outputs, index)) {
    NvtxScope range(nvtx_, NvtxRange::kEager);
    ++counters_.eager_calls;
    log_.Debug("eager_over_budget", {{"method", name_}, {"call", index}});
    return RunEager(inputs, outputs, stream, CallKind::kEager, index);
  }
  Status s = CaptureAndLaunch(inputs, outputs, stream, index, recapture, padded);
  SettleGraphMemory();
  return s;
}

}  // namespace encore
