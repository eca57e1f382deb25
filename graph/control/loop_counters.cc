// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/loop_counters.h"

#include <string>

namespace encore {

StatusOr<LoopCounters> LoopCounters::Create(int capacity) {
  if (capacity < 1) {
    return InvalidArgumentError("LoopCounters: capacity is " + std::to_string(capacity) + "; it must be at least 1");
  }
  ENCORE_ASSIGN_OR_RETURN(DeviceMemory memory,
                          DeviceMemory::Allocate(static_cast<size_t>(capacity) * sizeof(unsigned long long)));
  return LoopCounters(std::move(memory), capacity);
}

StatusOr<unsigned long long*> LoopCounters::Claim() {
  if (!memory_) return FailedPreconditionError("While: no loop counters were prepared before the capture");
  if (used_ >= capacity_) {
    return ResourceExhaustedError("While: the capture holds more than " + std::to_string(capacity_) +
                                  " While loops, the loop counters prepared for it");
  }
  return memory_.as<unsigned long long>() + used_++;
}

}  // namespace encore
