// SPDX-License-Identifier: Apache-2.0
// The graph-memory budget (ManagerOptions::graph_memory_budget) as one
// method instance sees it: a capture reserves the arena growth it will
// cause before it begins; when that would take the manager's graph memory
// over the budget, this method's least recently used graphs go first (and
// the arena slabs no kept graph reaches are freed), and if it still does not
// fit the call runs eagerly with the reason over_budget.
#ifndef ENCORE_GRAPH_STORE_INTERNAL_GRAPH_MEMORY_H_
#define ENCORE_GRAPH_STORE_INTERNAL_GRAPH_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "encore/core/internal/args.h"
#include "encore/graph/body/internal/method_info.h"
#include "encore/graph/store/internal/graph_store.h"

namespace encore {

// The arena a capture of these tensors reserves before it begins: static
// buffers, the output table (`out_table`: copy_outputs), a padded graph's
// words, and the method's peak eager scratch (sums that saturate, never
// wrap).
size_t CaptureReserveBytes(const GraphStore& store, Args graph_inputs, Args graph_outputs, bool out_table,
                           bool padded);

// What making room did: whether the capture fits, and how many graphs went.
struct Room {
  bool fits = true;
  int64_t dropped = 0;
};
// Reserves `reserve` bytes' growth in the manager's budget, dropping this
// method's least recently used graphs if that makes it fit.
Room MakeRoomForCapture(GraphStore& store, const MethodInfo& info, size_t reserve, int64_t index);
// Sets the budget's count of this instance to what its arena holds.
void SettleGraphMemory(GraphStore& store);

}  // namespace encore

#endif  // ENCORE_GRAPH_STORE_INTERNAL_GRAPH_MEMORY_H_
