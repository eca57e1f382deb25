// SPDX-License-Identifier: Apache-2.0
// Owns one CheckRecord in mapped pinned host memory: the device writes it
// through device(), the host reads it through host() with no copy and no
// sync, so a recorded check failure costs the replay path nothing.
#ifndef ENCORE_GRAPH_CHECKS_INTERNAL_MAPPED_CHECK_RECORD_H_
#define ENCORE_GRAPH_CHECKS_INTERNAL_MAPPED_CHECK_RECORD_H_

#include <utility>

#include "encore/core/internal/mapped_host.h"
#include "encore/core/status.h"
#include "encore/graph/checks/internal/device_check_kernel.h"

namespace encore {

class MappedCheckRecord {
 public:
  // A cleared record. Errors from cudaHostAlloc / cudaHostGetDevicePointer
  // come back as a Status, with nothing left allocated.
  [[nodiscard]] static StatusOr<MappedCheckRecord> Create();
  MappedCheckRecord() = default;
  // Destruction frees the memory; an error is logged, never thrown. No check
  // kernel that writes this record may still be queued or captured in a live
  // graph.

  volatile CheckRecord* host() const { return record_.host(); }
  CheckRecord* device() const { return record_.device(); }
  // Zeroes the record, `failed` last. Call only while no check that writes
  // it is in flight.
  void Clear();

 private:
  explicit MappedCheckRecord(MappedHost<CheckRecord> record) : record_(std::move(record)) {}

  MappedHost<CheckRecord> record_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CHECKS_INTERNAL_MAPPED_CHECK_RECORD_H_
