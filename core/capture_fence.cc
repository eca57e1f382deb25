// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/capture_fence.h"

#include <mutex>
#include <shared_mutex>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"

namespace encore {
namespace {

// Shared: a capture in flight. Exclusive: a device-wide sync.
std::shared_timed_mutex& Fence() {
  static std::shared_timed_mutex* fence = new std::shared_timed_mutex();  // never destroyed: tickets outlive statics
  return *fence;
}

thread_local int tickets_held = 0;

}  // namespace

CaptureTicket CaptureTicket::Take() {
  // A shared lock taken twice by one thread is undefined, and would wait
  // behind a sync that waits for this thread's first ticket.
  const bool locks = tickets_held == 0;
  if (locks) Fence().lock_shared();
  ++tickets_held;
  return CaptureTicket(locks);
}

void CaptureTicket::Return() noexcept {
  if (!held_) return;
  held_ = false;
  --tickets_held;
  if (locks_) Fence().unlock_shared();
  locks_ = false;
}

bool EncoreCaptureInFlight() {
  // A thread that holds the fence shared must not try it exclusively.
  if (tickets_held > 0) return true;
  if (!Fence().try_lock()) return true;
  Fence().unlock();
  return false;
}

StatusOr<bool> SynchronizeDeviceBetweenCaptures(std::chrono::milliseconds patience) {
  if (tickets_held > 0) return false;
  std::unique_lock<std::shared_timed_mutex> sync(Fence(), std::defer_lock);
  if (!sync.try_lock_for(patience)) return false;
  ENCORE_CUDA_CALL(DeviceSynchronize);
  return true;
}

}  // namespace encore
