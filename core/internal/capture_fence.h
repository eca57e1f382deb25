// SPDX-License-Identifier: Apache-2.0
// CaptureTicket and SynchronizeDeviceBetweenCaptures: encore's stream
// captures and its device-wide syncs, kept apart across threads.
//
// cudaDeviceSynchronize while any thread captures a stream fails and
// invalidates that capture, in every capture mode, thread-local included
// (checked on an H200 with CUDA 13). Verification needs a device-wide sync
// (the eager re-run may leave work on a stream it never joined), so every
// capture encore begins holds a ticket from before cudaStreamBeginCapture
// until it has ended, and a device-wide sync waits for the tickets of every
// thread to be returned while new captures wait for the sync. Captures that
// encore does not make (the application's own) are not covered.
#ifndef ENCORE_CORE_INTERNAL_CAPTURE_FENCE_H_
#define ENCORE_CORE_INTERNAL_CAPTURE_FENCE_H_

#include <chrono>

#include "encore/core/status.h"

namespace encore {

// Held by one capture; returns itself when destroyed or Returned. Move-only,
// and returned on the thread that took it.
class CaptureTicket {
 public:
  // Waits while a device-wide sync is in progress (no longer than that;
  // device work that waits for a host thread stuck here would never end).
  // A ticket taken while this thread holds one (a method captured inside
  // another's capture) only counts: the fence is not locked twice.
  static CaptureTicket Take();
  CaptureTicket(CaptureTicket&& o) noexcept : held_(o.held_), locks_(o.locks_) { o.held_ = o.locks_ = false; }
  CaptureTicket& operator=(CaptureTicket&&) = delete;
  CaptureTicket(const CaptureTicket&) = delete;
  ~CaptureTicket() { Return(); }
  void Return() noexcept;

 private:
  explicit CaptureTicket(bool locks) : held_(true), locks_(locks) {}
  bool held_;
  bool locks_;  // this ticket holds the fence's shared lock
};

// Whether an encore capture is in flight: this thread holds a ticket, or
// another thread does (or a device-wide sync is running), without waiting.
[[nodiscard]] bool EncoreCaptureInFlight();

// Waits up to `patience` until no encore capture is in flight on any thread,
// then cudaDeviceSynchronize while new captures wait. Returns false, having
// synced nothing, when a capture was still in flight after `patience`, or at
// once when this thread itself holds a ticket (its capture would break).
[[nodiscard]] StatusOr<bool> SynchronizeDeviceBetweenCaptures(std::chrono::milliseconds patience);

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_CAPTURE_FENCE_H_
