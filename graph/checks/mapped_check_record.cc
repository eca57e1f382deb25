// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/checks/internal/mapped_check_record.h"

#include <atomic>

#include <utility>

namespace encore {

StatusOr<MappedCheckRecord> MappedCheckRecord::Create() {
  // Portable (MappedHost): checks may run on streams of any device.
  ENCORE_ASSIGN_OR_RETURN(MappedHost<CheckRecord> host, MappedHost<CheckRecord>::Create());
  MappedCheckRecord record(std::move(host));
  record.Clear();
  return record;
}

void MappedCheckRecord::Clear() {
  if (!record_) return;
  volatile CheckRecord* r = record_.host();
  r->check_id = 0;
  r->seq = 0;
  r->call_index = 0;
  // The fields are clean before a check can see `failed` at 0 again.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  r->failed = 0;
}

}  // namespace encore
