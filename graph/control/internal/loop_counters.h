// SPDX-License-Identifier: Apache-2.0
// LoopCounters: device memory for the iteration counters of the WHILE loops
// of one captured graph, one slot per loop, allocated before the capture
// (nothing may allocate inside one). The WHILE entry kernel zeroes its slot
// on every replay, so the slots need no clearing; but two graphs replaying
// at once must not share slots: keep one LoopCounters alive with each graph
// that has loops, as long as that graph.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_LOOP_COUNTERS_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_LOOP_COUNTERS_H_

#include <utility>

#include "encore/core/internal/device_memory.h"
#include "encore/core/status.h"

namespace encore {

class LoopCounters {
 public:
  // Loops one capture may hold unless told otherwise.
  static constexpr int kDefaultCapacity = 64;

  // `capacity` slots (>= 1) of device memory on the current device.
  [[nodiscard]] static StatusOr<LoopCounters> Create(int capacity = kDefaultCapacity);
  LoopCounters() = default;

  // The next free slot: host bookkeeping only, so it may be called inside a
  // capture. ResourceExhausted, naming the capacity, when all are taken.
  [[nodiscard]] StatusOr<unsigned long long*> Claim();
  // Frees every slot for a new capture. The graphs that used them must be
  // gone (or never replay again).
  void Release() { used_ = 0; }
  int capacity() const { return capacity_; }
  int used() const { return used_; }

 private:
  LoopCounters(DeviceMemory memory, int capacity) : memory_(std::move(memory)), capacity_(capacity) {}
  DeviceMemory memory_;
  int capacity_ = 0;
  int used_ = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_LOOP_COUNTERS_H_
