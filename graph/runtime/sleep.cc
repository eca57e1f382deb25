// SPDX-License-Identifier: Apache-2.0
// Manager::Sleep and Wake on one method instance: the memory behind its
// graph arena given back and mapped again at the same addresses
// (allocator/internal/slab_memory.h), so its executables, which hold those
// addresses, replay after a wake with no capture. The first call after a
// sleep finds no held replay (Note [replay path], replay.cc) and wakes the
// manager first.
#include <string>
#include <utility>

#include "encore/graph/internal/messages.h"
#include "encore/graph/runtime/internal/method_instance.h"

namespace encore {

StatusOr<size_t> MethodInstance::Sleep() {
  LogScope log_scope(&s_.info.log, s_.info.name);
  ENCORE_RETURN_IF_ERROR(s_.runner.RejectReentry("Sleep"));
  std::unique_lock<std::mutex> lock(mu_);
  // A capture being recorded writes the arena: waited for. A ready one
  // stays, held in the arena, whose memory sleeps and wakes with the rest,
  // so its first launch after the wake needs no capture; queued ones go,
  // and their next calls queue them again.
  if (s_.background.on()) {
    s_.background.AbandonQueued();
    WaitWhileRecording(lock);
  }
  // After the wait, which releases mu_: no call replays a graph whose
  // memory sleeps, and the next one wakes the manager.
  held_ = HeldReplay{};
  call_hook_due_ = true;
  // Every launch that may still use the slabs: the graphs' last launch,
  // and encore's own work after it, which records the same event.
  ENCORE_RETURN_IF_ERROR(s_.store.last_launch.Wait());
  // Verification's copies of a call's tensors are made again when needed.
  s_.constants.DropScratch();
  StatusOr<size_t> given = s_.store.arena.Sleep();
  if (!given.ok()) return NameMethod(s_.info.name, given.status());
  if (const size_t kept = s_.store.arena.kept_bytes(); kept > 0) {
    s_.info.log.Warn("sleep_kept", {{"method", s_.info.name},
                                    {"bytes", kept},
                                    {"detail", "graph memory from cudaMalloc (no virtual memory management on this "
                                               "device or driver) stays allocated through a sleep"}});
  }
  return given;
}

Status MethodInstance::Wake() {
  LogScope log_scope(&s_.info.log, s_.info.name);
  ENCORE_RETURN_IF_ERROR(s_.runner.RejectReentry("Wake"));
  std::unique_lock<std::mutex> lock(mu_);
  return WakeLocked(lock);
}

Status MethodInstance::WakeLocked(std::unique_lock<std::mutex>& lock) {
  held_ = HeldReplay{};
  Status s = s_.store.arena.Wake();
  if (s.ok()) return OkStatus();
  // No memory to map back (taken by others while asleep): the graphs go,
  // and the method warms up and captures again, within what is free then.
  s = NameMethod(s_.info.name, s);
  s_.info.log.Error("wake_failed", {{"method", s_.info.name},
                                    {"error", s.message()},
                                    {"detail", "the method's graphs are dropped; it captures again"}});
  (void)ReleaseLocked(lock);
  return s;
}

void MethodInstance::WakeForCall(std::unique_lock<std::mutex>& lock) {
  // The manager's wake takes every instance's mutex, this one's too.
  call_hook_due_ = false;
  lock.unlock();
  if (wake_manager_) wake_manager_();
  lock.lock();
  // A sleep that came in between: this instance wakes alone. A wake that
  // fails has dropped the graphs (logged), so the call runs without them.
  LogScope log_scope(&s_.info.log, s_.info.name);
  if (s_.store.arena.asleep()) (void)WakeLocked(lock);
}

}  // namespace encore
