// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/store/internal/graph_memory.h"

#include <algorithm>
#include <limits>
#include <string>

namespace encore {
namespace {

size_t AddSaturated(size_t a, size_t b) { return b > std::numeric_limits<size_t>::max() - a ? std::numeric_limits<size_t>::max() : a + b; }

void LogOverBudget(GraphStore& s, const MethodInfo& info, size_t growth, int64_t index) {
  if (s.budget.over_logged) return;
  s.budget.over_logged = true;
  info.log.Warn("over_budget", {{"method", info.name},
                                {"call", index},
                                {"needed", growth},
                                {"used", s.budget.budget->used()},
                                {"budget", s.budget.budget->limit()},
                                {"detail", "a new graph would take the manager's graph memory over graph_memory_budget; "
                                           "such calls of this method run eagerly"}});
}

// Drops the least recently used graph; false when that failed.
bool DropOne(GraphStore& s, const MethodInfo& info, int64_t index) {
  // The dropped graph may still be running, and its slabs are freed now.
  if (Status st = s.last_launch.Wait(); !st.ok()) {
    info.log.Warn("budget_drop_failed", {{"method", info.name}, {"error", st.message()}});
    return false;
  }
  s.cache.Erase(s.cache.size() - 1);
  if (Status st = s.arena.TrimUnused(); !st.ok()) {
    info.log.Warn("budget_drop_failed", {{"method", info.name}, {"error", st.message()}});
  }
  SettleGraphMemory(s);
  info.log.Info("budget_drop", {{"method", info.name}, {"call", index}, {"graphs_left", s.cache.size()},
                                {"graph_memory_bytes", s.budget.counted}});
  return true;
}

}  // namespace

size_t CaptureReserveBytes(const GraphStore& store, Args graph_inputs, Args graph_outputs, bool out_table,
                           bool padded) {
  size_t bytes = store.arena.eager_peak_bytes();
  for (Args refs : {graph_inputs, graph_outputs}) {
    for (const TensorRef& t : refs) bytes = AddSaturated(bytes, AddSaturated(t.span_bytes(), GraphArena::kAlignment));
  }
  if (out_table && !graph_outputs.empty()) {
    bytes = AddSaturated(bytes, graph_outputs.size() * sizeof(void*) + GraphArena::kAlignment);
  }
  if (padded) bytes = AddSaturated(bytes, (graph_outputs.size() + 1) * sizeof(uint64_t) + GraphArena::kAlignment);
  return bytes;
}

void SettleGraphMemory(GraphStore& s) {
  if (!s.budget.budget) return;
  const size_t now = s.arena.stats().reserved_bytes;
  s.budget.budget->Adjust(static_cast<int64_t>(now) - static_cast<int64_t>(s.budget.counted));
  s.budget.counted = now;
}

Room MakeRoomForCapture(GraphStore& s, const MethodInfo& info, size_t reserve, int64_t index) {
  Room room;
  MemoryBudget* budget = s.budget.budget.get();
  if (!budget) return room;
  // Dropping every graph of this method frees at most all its slabs; when
  // even that would not make room, no graph is dropped for nothing.
  const size_t alone = std::max(reserve, GraphArena::kMinSlabBytes);
  const size_t others = budget->used() - std::min(budget->used(), s.budget.counted);
  bool could_fit = budget->limit() == 0 || (alone <= budget->limit() && others <= budget->limit() - alone);
  size_t growth = s.arena.GrowthForCapture(reserve);
  while (!budget->TryReserve(growth)) {
    if (!could_fit || s.cache.empty()) {
      LogOverBudget(s, info, growth, index);
      room.fits = false;
      return room;
    }
    could_fit = DropOne(s, info, index);
    room.dropped += could_fit ? 1 : 0;
    growth = s.arena.GrowthForCapture(reserve);
  }
  s.budget.counted += growth;
  return room;
}

}  // namespace encore
