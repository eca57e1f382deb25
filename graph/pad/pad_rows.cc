// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/pad/internal/pad_rows.h"

#include <atomic>

#include "encore/graph/internal/messages.h"

namespace encore {

Status PadRows::Prepare(const std::string& method) {
  if (ring_) return OkStatus();
  // Portable and mapped (MappedHost, zeroed): the graph may launch on
  // streams of any device's context that shares it, and reads the slot over
  // the bus.
  ENCORE_ASSIGN_OR_RETURN(ring_, MappedHost<PadRowsShared>::Create(MethodQuoted(method) + ": padded rows ring"));
  launches_ = 0;
  return OkStatus();
}

bool PadRows::behind() const {
  const volatile PadRowsShared* r = ring_.host();
  return launches_ - r->launches >= PadRowsShared::kSlots;
}

void PadRows::Set(int64_t rows) {
  volatile PadRowsShared* r = ring_.host();
  r->rows[launches_ % PadRowsShared::kSlots] = static_cast<uint64_t>(rows);
  // Written before the launch that reads it is queued.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace encore
