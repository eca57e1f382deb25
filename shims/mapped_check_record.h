// Owns one CheckRecord in mapped pinned host memory: the device writes it
// through device(), the host reads it through host() with no copy and no
// sync, so a recorded check failure costs the replay path nothing.
#ifndef ENCORE_SHIMS_MAPPED_CHECK_RECORD_H_
#define ENCORE_SHIMS_MAPPED_CHECK_RECORD_H_

#include "encore/core/status.h"
#include "encore/shims/device_check.h"

namespace encore::shims {

class MappedCheckRecord {
 public:
  // A cleared record. Errors from cudaHostAlloc / cudaHostGetDevicePointer
  // come back as a Status, with nothing left allocated.
  static StatusOr<MappedCheckRecord> Create();

  MappedCheckRecord() = default;
  MappedCheckRecord(MappedCheckRecord&& other) noexcept;
  MappedCheckRecord& operator=(MappedCheckRecord&& other) noexcept;
  MappedCheckRecord(const MappedCheckRecord&) = delete;
  MappedCheckRecord& operator=(const MappedCheckRecord&) = delete;
  // Frees the memory; an error is logged, never thrown. No check kernel that
  // writes this record may still be queued or captured in a live graph.
  ~MappedCheckRecord();

  volatile CheckRecord* host() const { return host_; }
  CheckRecord* device() const { return device_; }
  // Zeroes the record, `failed` last. Call only while no check that writes
  // it is in flight.
  void Clear();

 private:
  MappedCheckRecord(CheckRecord* host, CheckRecord* device) : host_(host), device_(device) {}
  void Reset();

  CheckRecord* host_ = nullptr;
  CheckRecord* device_ = nullptr;
};

}  // namespace encore::shims

#endif  // ENCORE_SHIMS_MAPPED_CHECK_RECORD_H_
