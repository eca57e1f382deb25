// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/capture/internal/graph_memory.h"

#include <algorithm>
#include <limits>
#include <string>

namespace encore {
namespace {

size_t AddSaturated(size_t a, size_t b) { return b > std::numeric_limits<size_t>::max() - a ? std::numeric_limits<size_t>::max() : a + b; }

}  // namespace

size_t CaptureReserveBytes(const InstanceParts& p, Args graph_inputs, Args graph_outputs) {
  size_t bytes = p.arena.eager_peak_bytes();
  for (Args refs : {graph_inputs, graph_outputs}) {
    for (const TensorRef& t : refs) bytes = AddSaturated(bytes, AddSaturated(t.span_bytes(), GraphArena::kAlignment));
  }
  if (p.flags.copy_outputs && !graph_outputs.empty()) {
    bytes = AddSaturated(bytes, graph_outputs.size() * sizeof(void*) + GraphArena::kAlignment);
  }
  if (p.pad.on()) bytes = AddSaturated(bytes, (graph_outputs.size() + 1) * sizeof(uint64_t) + GraphArena::kAlignment);
  return bytes;
}

void SettleGraphMemory(InstanceParts& p) {
  if (!p.budget.budget) return;
  const size_t now = p.arena.stats().reserved_bytes;
  p.budget.budget->Adjust(static_cast<int64_t>(now) - static_cast<int64_t>(p.budget.counted));
  p.budget.counted = now;
}

namespace {

void LogOverBudget(InstanceParts& p, size_t growth, int64_t index) {
  ++p.counters.over_budget_calls;
  if (p.budget.over_logged) return;
  p.budget.over_logged = true;
  p.log.Warn("over_budget", {{"method", p.name},
                             {"call", index},
                             {"needed", growth},
                             {"used", p.budget.budget->used()},
                             {"budget", p.budget.budget->limit()},
                             {"detail", "a new graph would take the manager's graph memory over graph_memory_budget; "
                                        "such calls of this method run eagerly"}});
}

// Drops the least recently used graph; false when that failed.
bool DropOne(InstanceParts& p, int64_t index) {
  // The dropped graph may still be running, and its slabs are freed now.
  if (Status s = p.last_launch.Wait(); !s.ok()) {
    p.log.Warn("budget_drop_failed", {{"method", p.name}, {"error", s.message()}});
    return false;
  }
  p.cache.Erase(p.cache.size() - 1);
  if (Status s = p.arena.TrimUnused(); !s.ok()) {
    p.log.Warn("budget_drop_failed", {{"method", p.name}, {"error", s.message()}});
  }
  SettleGraphMemory(p);
  ++p.counters.budget_drops;
  p.log.Info("budget_drop", {{"method", p.name}, {"call", index}, {"graphs_left", p.cache.size()},
                             {"graph_memory_bytes", p.budget.counted}});
  return true;
}

}  // namespace

bool MakeRoomForCapture(InstanceParts& p, Args graph_inputs, Args graph_outputs, int64_t index) {
  MemoryBudget* budget = p.budget.budget.get();
  if (!budget) return true;
  const size_t reserve = CaptureReserveBytes(p, graph_inputs, graph_outputs);
  // Dropping every graph of this method frees at most all its slabs; when
  // even that would not make room, no graph is dropped for nothing.
  const size_t alone = std::max(reserve, GraphArena::kMinSlabBytes);
  const size_t others = budget->used() - std::min(budget->used(), p.budget.counted);
  bool could_fit = budget->limit() == 0 || (alone <= budget->limit() && others <= budget->limit() - alone);
  size_t growth = p.arena.GrowthForCapture(reserve);
  while (!budget->TryReserve(growth)) {
    if (!could_fit || p.cache.empty()) {
      LogOverBudget(p, growth, index);
      return false;
    }
    could_fit = DropOne(p, index);
    growth = p.arena.GrowthForCapture(reserve);
  }
  p.budget.counted += growth;
  return true;
}

}  // namespace encore
