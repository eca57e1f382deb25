// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/loop_record.h"

#include <atomic>

#include <utility>

namespace encore {

StatusOr<LoopRecord> LoopRecord::Create() {
  // Portable (MappedHost): loops may run on streams of any device.
  ENCORE_ASSIGN_OR_RETURN(MappedHost<LoopRunaway> host, MappedHost<LoopRunaway>::Create("loop record"));
  LoopRecord record(std::move(host));
  record.Clear();
  return record;
}

std::optional<LoopRecord::Runaway> LoopRecord::Take() {
  if (!pending()) return std::nullopt;
  // The kernel fenced its fields before it wrote the state read above.
  std::atomic_thread_fence(std::memory_order_acquire);
  volatile LoopRunaway* r = record_.host();
  Runaway out{r->loop_id, static_cast<int64_t>(r->bound), static_cast<uint64_t>(r->seq)};
  Clear();
  return out;
}

void LoopRecord::Clear() {
  if (!record_) return;
  volatile LoopRunaway* r = record_.host();
  r->loop_id = 0;
  r->bound = 0;
  r->seq = 0;
  // The fields are clean before a loop can see `state` at 0 again.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  r->state = 0;
}

std::string LoopRunawayMessage(std::string_view method, int64_t bound, int64_t call) {
  return "method '" + std::string(method) + "': a While loop reached its bound of " + std::to_string(bound) +
         " iterations with its condition still true (call " + (call >= 0 ? std::to_string(call) : "unknown") + ")";
}

Status LoopRunawayError(std::string_view method, int64_t bound, int64_t call) {
  return FailedPreconditionError(LoopRunawayMessage(method, bound, call));
}

}  // namespace encore
