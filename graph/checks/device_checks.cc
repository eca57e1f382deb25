// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/checks/internal/device_checks.h"

#include <chrono>
#include <thread>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/capture_fence.h"
#include "encore/graph/checks/internal/device_check_kernel.h"
#include "encore/graph/internal/messages.h"

namespace encore {
namespace {
constexpr int kOverflowId = static_cast<int>(DeviceChecks::kMaxMessages);
}  // namespace

Status DeviceChecks::EnsureRecord() {
  if (record_) return OkStatus();
  ENCORE_ASSIGN_OR_RETURN(auto rec, MappedCheckRecord::Create());
  record_ = std::make_unique<MappedCheckRecord>(std::move(rec));
  return OkStatus();
}

Status DeviceChecks::PrepareForCapture(cudaStream_t stream) {
  if (mode_ != CheckMode::kRecord) return OkStatus();
  ENCORE_RETURN_IF_ERROR(EnsureRecord());
  if (device_sequence_) return OkStatus();
  StatusOr<DeviceMemory> seq = DeviceMemory::Allocate(sizeof(unsigned long long));
  if (!seq.ok()) {
    return Status(seq.status().code(), MethodQuoted(*method_) + ": device check sequence counter: " +
                                           std::string(seq.status().message()));
  }
  ENCORE_RETURN_IF_ERROR(CudaResult(cuda().MemsetAsync(seq->get(), 0, sizeof(unsigned long long), stream),
                                    CudaCall::kMemsetAsync, MethodQuoted(*method_) + ": device check sequence"));
  device_sequence_ = *std::move(seq);
  return OkStatus();
}

int DeviceChecks::MessageId(std::string_view message) {
  // One id per distinct message, so an eager method that checks on every
  // call does not grow the list.
  std::lock_guard<std::mutex> lock(messages_mu_);
  auto it = message_ids_.find(std::string(message));
  if (it != message_ids_.end()) return it->second;
  if (messages_.size() >= kMaxMessages) return kOverflowId;
  int id = static_cast<int>(messages_.size());
  messages_.emplace_back(message);
  message_ids_.emplace(messages_.back(), id);
  return id;
}

Status DeviceChecks::Check(const bool* device_cond, std::string_view message, bool in_graph, int64_t call_index,
                           cudaStream_t stream) {
  if (mode_ == CheckMode::kOff) return OkStatus();
  if (device_cond == nullptr) {
    return InvalidArgumentError(MethodQuoted(*method_) + ": Check got a null condition pointer");
  }
  const bool trap = mode_ == CheckMode::kTrap;
  CheckRecord* rec = nullptr;
  if (!trap) {
    ENCORE_RETURN_IF_ERROR(EnsureRecord());
    rec = record_->device();
  }
  cudaError_t err = LaunchDeviceCheck(device_cond, rec, MessageId(message), in_graph ? sequence() : nullptr,
                                      call_index, trap, stream);
  ENCORE_RETURN_IF_ERROR(LaunchResult(err, "device check launch", MethodQuoted(*method_)));
  if (in_graph) ++graph_checks_;
  return OkStatus();
}

int64_t DeviceChecks::FailedCall(volatile const CheckRecord* r) const {
  if (r->call_index >= 0) return r->call_index;
  // seq counts launches of this method's graphs, the failing one included.
  return CallOfSequence(r->seq);
}

void DeviceChecks::WaitForCheckKernels() {
  // A device-wide sync, but not while another thread captures (it would
  // invalidate that capture): then a pause far longer than the few
  // instructions between the kernel's claim and its fence.
  StatusOr<bool> synced = SynchronizeDeviceBetweenCaptures(std::chrono::milliseconds(500));
  if (synced.ok() && *synced) return;
  if (!synced.ok()) ClearCudaError();  // ours; a timeout leaves the application's alone
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

Status DeviceChecks::TakeFailure() {
  if (!record_) return OkStatus();
  volatile CheckRecord* r = record_->host();
  if (!r->failed) return OkStatus();
  // The kernel claims the record before it writes the other fields; wait for
  // it to finish. This is the failure path only, never a replay.
  WaitForCheckKernels();
  const int64_t call = FailedCall(r);
  std::string msg = MessageText(r->check_id);
  record_->Clear();
  ++failures_;
  log_->Warn("check_failed", {{"method", *method_}, {"message", msg}, {"call", call}});
  return FailedPreconditionError(MethodQuoted(*method_) + ": check failed: " + msg + " (call " +
                                 (call >= 0 ? std::to_string(call) : std::string("unknown")) + ")");
}

std::string DeviceChecks::MessageText(int id) const {
  std::lock_guard<std::mutex> lock(messages_mu_);
  if (id >= 0 && id < static_cast<int>(messages_.size())) return messages_[id];
  if (id == kOverflowId) {
    return "(one of more than " + std::to_string(kMaxMessages) + " distinct check messages; its text was not kept)";
  }
  return "unknown check";
}

std::string DeviceChecks::DiscardFailure() {
  if (!failure_pending()) return {};
  // As in TakeFailure: the kernel claims the record before it writes the
  // message id.
  WaitForCheckKernels();
  std::string msg = MessageText(record_->host()->check_id);
  record_->Clear();
  return msg;
}

}  // namespace encore
