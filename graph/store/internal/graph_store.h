// SPDX-License-Identifier: Apache-2.0
// GraphStore: a method instance's graphs and the memory they run on: the
// arena (static buffers, capture scratch), the entries (one per captured
// signature, most recently used first), the last launch (which a dropped
// graph or a launch on another stream waits for), and the instance's share
// of the manager's graph-memory budget.
#ifndef ENCORE_GRAPH_STORE_INTERNAL_GRAPH_STORE_H_
#define ENCORE_GRAPH_STORE_INTERNAL_GRAPH_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "encore/allocator/internal/graph_arena.h"
#include "encore/allocator/internal/memory_budget.h"
#include "encore/graph/store/internal/graph_cache.h"
#include "encore/graph/store/internal/last_launch.h"

namespace encore {

// This instance's share of the manager's graph-memory budget.
struct BudgetShare {
  std::shared_ptr<MemoryBudget> budget;  // null: the manager has none
  size_t counted = 0;                    // bytes of this instance the budget counts
  bool over_logged = false;
};

struct GraphStore {
  GraphStore(const std::string* method, std::shared_ptr<MemoryBudget> budget)
      : last_launch(method), budget{std::move(budget)} {}
  GraphStore(const GraphStore&) = delete;
  GraphStore& operator=(const GraphStore&) = delete;

  GraphArena arena;
  LastLaunch last_launch;
  GraphCache cache{&arena, &last_launch};
  BudgetShare budget;
  uint64_t next_capture_id = 0;  // the arena's id of the next capture
};

}  // namespace encore

#endif  // ENCORE_GRAPH_STORE_INTERNAL_GRAPH_STORE_H_
