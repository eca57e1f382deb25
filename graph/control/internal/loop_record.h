// SPDX-License-Identifier: Apache-2.0
// LoopRecord: owns the LoopRunaway that a WHILE loop which reached its bound
// writes (graph/control/internal/control_kernels.h), in mapped pinned host
// memory, so the host sees a runaway with no copy, no sync and no CUDA call:
// the next Run or Synchronize of the method turns it into the
// FailedPrecondition that LoopRunawayError formats, as DeviceChecks does for
// a failed Call::Check.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_LOOP_RECORD_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_LOOP_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "encore/core/internal/mapped_host.h"
#include "encore/core/status.h"
#include "encore/graph/control/internal/control_kernels.h"

namespace encore {

class LoopRecord {
 public:
  struct Runaway {
    int loop_id = 0;
    int64_t bound = 0;
    uint64_t seq = 0;  // LoopRunaway::seq
  };

  // A cleared record; allocate it outside any capture. Errors of
  // cudaHostAlloc / cudaHostGetDevicePointer come back as a Status with
  // nothing left allocated.
  [[nodiscard]] static StatusOr<LoopRecord> Create();
  LoopRecord() = default;
  // Destruction frees the memory: no loop that writes this record may still
  // be queued, or captured in a live graph.

  // What the WHILE-next kernel is given.
  LoopRunaway* device() const { return record_.device(); }
  volatile const LoopRunaway* host() const { return record_.host(); }
  // A runaway was written and not yet taken. Reads host memory only; a loop
  // still running is not seen.
  bool pending() const { return record_ && host()->state == kLoopRunawayWritten; }
  // The runaway written since the last Take or Clear (then clears it), or
  // nullopt when none is written.
  std::optional<Runaway> Take();
  // Zeroes the record, `state` last. Call only while no loop that writes it
  // is in flight.
  void Clear();

 private:
  explicit LoopRecord(MappedHost<LoopRunaway> record) : record_(std::move(record)) {}

  MappedHost<LoopRunaway> record_;
};

// "method 'NAME': a While loop reached its bound of N iterations with its
// condition still true (call C)"; "(call unknown)" when call < 0.
std::string LoopRunawayMessage(std::string_view method, int64_t bound, int64_t call);
// FailedPrecondition with LoopRunawayMessage.
Status LoopRunawayError(std::string_view method, int64_t bound, int64_t call);

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_LOOP_RECORD_H_
