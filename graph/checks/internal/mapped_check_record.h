// SPDX-License-Identifier: Apache-2.0
// Owns one CheckRecord in mapped pinned host memory: the device writes it
// through device(), the host reads it through host() with no copy and no
// sync, so a recorded check failure costs the replay path nothing.
#ifndef ENCORE_GRAPH_CHECKS_INTERNAL_MAPPED_CHECK_RECORD_H_
#define ENCORE_GRAPH_CHECKS_INTERNAL_MAPPED_CHECK_RECORD_H_

#include <string_view>

#include "encore/core/cuda_handle.h"
#include "encore/core/status.h"
#include "graph/checks/internal/device_check_kernel.h"

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

  volatile CheckRecord* host() const { return host_.get(); }
  CheckRecord* device() const { return device_; }
  // Zeroes the record, `failed` last. Call only while no check that writes
  // it is in flight.
  void Clear();

 private:
  struct PinnedTraits {
    using Handle = CheckRecord*;
    static cudaError_t Destroy(CheckRecord* host);
    static constexpr std::string_view kWhat = "check_record";
  };
  MappedCheckRecord(CheckRecord* host, CheckRecord* device) : host_(host), device_(device) {}

  CudaHandle<PinnedTraits> host_;
  CheckRecord* device_ = nullptr;  // the device's view of host_
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CHECKS_INTERNAL_MAPPED_CHECK_RECORD_H_
