// SPDX-License-Identifier: Apache-2.0
// DeviceChecks: one method instance's state behind Call::Check in record
// mode: the mapped record a failed check writes, the device sequence counter
// each graph launch bumps (so a failure inside a replay names its call), a
// ring that maps launches back to call indices, and the check messages.
// Internal to graph/; the owner serializes every call (the method's mutex),
// except Check from a capture on the manager's worker (capture=background),
// which may run beside an eager call's Check or TakeFailure: the messages
// have a mutex of their own, held for no more than a look-up (never while
// logging: a Python logger takes the GIL, which that capture's body holds).
#ifndef ENCORE_GRAPH_CHECKS_INTERNAL_DEVICE_CHECKS_H_
#define ENCORE_GRAPH_CHECKS_INTERNAL_DEVICE_CHECKS_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "encore/core/internal/device_memory.h"
#include "encore/core/internal/log.h"
#include "encore/core/status.h"
#include "encore/graph/checks/internal/mapped_check_record.h"
#include "encore/policy/method_flags.h"

namespace encore {

class DeviceChecks {
 public:
  // Distinct messages kept; later ones share one id, so a method that builds
  // a new message on every call cannot grow memory without bound.
  static constexpr size_t kMaxMessages = 1024;

  DeviceChecks(const std::string* method, CheckMode mode, const EventLog* log)
      : method_(method), mode_(mode), log_(log) {}
  // The owner has waited for its last launch before destroying this.
  DeviceChecks(const DeviceChecks&) = delete;
  DeviceChecks& operator=(const DeviceChecks&) = delete;

  // Before a capture in record mode: makes the mapped record and the device
  // sequence counter, which cannot be allocated inside a capture.
  Status PrepareForCapture(cudaStream_t stream);
  // The counter a graph's first node bumps; null unless record mode.
  unsigned long long* sequence() const { return device_sequence_.as<unsigned long long>(); }

  // Call::Check: queues the check kernel on `stream`. `in_graph` is true
  // during a capture, where the failing call is found through the sequence.
  Status Check(const bool* device_cond, std::string_view message, bool in_graph, int64_t call_index,
               cudaStream_t stream);
  // A graph launch for call `index` was queued.
  void RecordLaunch(int64_t index) {
    launch_calls_[launches_ % kLaunchRing] = index;
    ++launches_;
  }
  // FailedPrecondition naming the method, the message and the call when a
  // check failed since the last time; clears the failure.
  Status TakeFailure();
  // Whether a check has recorded a failure not yet taken (the record is
  // mapped host memory: no CUDA call; a check still running is not seen).
  bool failure_pending() const { return record_ && record_->host()->failed; }
  // Whether a body of this method called Call::Check (the record exists).
  bool in_use() const { return record_ != nullptr; }
  // Takes a failure recorded by encore's own run of a graph (the binding
  // probe), which belongs to no call: clears it without counting or logging
  // it as a check failure. Its message, or empty when none is recorded.
  std::string DiscardFailure();
  int64_t failures() const { return failures_; }
  // The call whose graph launch had device sequence number `seq` (what a
  // replay's record names), or -1 when it is no longer known.
  int64_t CallOfSequence(uint64_t seq) const {
    return seq >= 1 && launches_ - seq < kLaunchRing ? launch_calls_[(seq - 1) % kLaunchRing] : -1;
  }
  // Checks queued inside captures so far: a graph whose capture added none
  // needs no node that bumps the sequence.
  int64_t graph_checks() const { return graph_checks_; }

 private:
  // Until a check kernel that claimed the record has written it.
  static void WaitForCheckKernels();
  static constexpr size_t kLaunchRing = 4096;
  Status EnsureRecord();
  int MessageId(std::string_view message);
  // The text of check `id`, as the record names it.
  std::string MessageText(int id) const;
  // The call a recorded failure belongs to, or -1 when unknown.
  int64_t FailedCall(volatile const CheckRecord* r) const;

  const std::string* const method_;
  const CheckMode mode_;
  const EventLog* const log_;
  std::unique_ptr<MappedCheckRecord> record_;
  DeviceMemory device_sequence_;  // one unsigned long long
  uint64_t launches_ = 0;
  std::array<int64_t, kLaunchRing> launch_calls_{};
  mutable std::mutex messages_mu_;
  std::vector<std::string> messages_;  // indexed by check id
  std::unordered_map<std::string, int> message_ids_;
  int64_t failures_ = 0;
  int64_t graph_checks_ = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CHECKS_INTERNAL_DEVICE_CHECKS_H_
