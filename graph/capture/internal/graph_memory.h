// SPDX-License-Identifier: Apache-2.0
// The graph-memory budget (ManagerOptions::graph_memory_budget) as one
// method instance sees it: a capture reserves the arena growth it will
// cause before it begins; when that would take the manager's graph memory
// over the budget, this method's least recently used graphs go first (and
// the arena slabs no kept graph reaches are freed), and if it still does not
// fit the call runs eagerly with the reason over_budget.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_GRAPH_MEMORY_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_GRAPH_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "encore/graph/binding/internal/address_set.h"
#include "encore/graph/instance/internal/instance_parts.h"

namespace encore {

// The arena a capture of these tensors reserves before it begins: static
// buffers, the output table, a padded graph's words, and the method's peak
// eager scratch (sums that saturate, never wrap).
size_t CaptureReserveBytes(const InstanceParts& p, Args graph_inputs, Args graph_outputs);
// Reserves the capture's growth in the manager's budget, dropping this
// method's least recently used graphs if that makes it fit; false (logged
// once, counted) when it cannot fit.
bool MakeRoomForCapture(InstanceParts& p, Args graph_inputs, Args graph_outputs, int64_t index);
// Sets the budget's count of this instance to what its arena holds.
void SettleGraphMemory(InstanceParts& p);

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_GRAPH_MEMORY_H_
