// SPDX-License-Identifier: Apache-2.0
// RetiredOwners: the owners of a destroyed Method (its instances: graphs,
// memory, streams), destroyed at once or, inside a stream capture that
// their destruction would break, kept until an encore call outside it.
//
// Note [Owners destroyed inside a capture]
// A method instance's destructor waits for its last launch
// (cudaEventSynchronize) and frees device and pinned memory (cudaFree,
// cudaFreeHost). While this thread captures a stream in global or
// thread-local mode, or any thread captures in global mode, CUDA refuses
// those calls from a thread in its default capture mode with
// cudaErrorStreamCaptureUnsupported and invalidates that capture: a Manager
// destroyed inside the application's own capture (a hand-written graph,
// torch.cuda.graph) broke it. CUDA has no query for "a capture this
// thread's calls would break"; what encore can see of one (CaptureInSight):
//   - an encore capture in flight, on this thread or another (capture fence);
//   - the stream of the encore call that asks (Method::Run's), capturing;
//   - a blocking stream of the current device capturing, on any thread:
//     cudaStreamIsCapturing on the legacy stream then answers
//     cudaErrorStreamCaptureImplicit, and CUDA documents that this query
//     does not invalidate that capture;
//   - this thread's per-thread default stream, capturing.
// With one in sight, the owners are kept here, and the first encore call
// that sees none destroys them (Manager::Create and Register, a Manager's
// destructor, Precapture, Release, and every Method::Run but a held replay,
// Note [replay path] in graph/runtime/replay.cc); a process that makes no
// such call again keeps them until it exits. A capture on a non-blocking
// stream that encore was not called on cannot be seen: for it, every
// destruction here runs with this thread's capture mode relaxed
// (cudaThreadExchangeStreamCaptureMode), in which CUDA refuses no call for
// another capture's sake (PyTorch allocates inside captures that way). A
// call that conflicts with a capture in every mode (a device-wide sync, as
// the capture fence says) is not covered by that; docs/limitations.md says
// what is left.
#ifndef ENCORE_CORE_INTERNAL_RETIRED_OWNERS_H_
#define ENCORE_CORE_INTERNAL_RETIRED_OWNERS_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string_view>

namespace encore {

// An owner whose destructor waits for the device and frees its memory, on
// device `device`.
class Retired {
 public:
  explicit Retired(int device) : device_(device) {}
  virtual ~Retired() = default;
  Retired(const Retired&) = delete;
  Retired& operator=(const Retired&) = delete;
  int device() const { return device_; }

 private:
  const int device_;
};

// Why a capture is in sight on the current device (see the Note), or empty
// when none is. `stream`, when not null, is a stream alive for the call
// (the caller's) and is checked too. Queries that fail (no device) see
// nothing and leave no error in the thread's last-error slot.
[[nodiscard]] std::string_view CaptureInSight(cudaStream_t stream = nullptr);

class RetiredOwners {
 public:
  // Destroys `owner` now, on its device with the capture mode relaxed, or
  // keeps it while a capture is in sight there; returns why it was kept
  // (empty: destroyed).
  [[nodiscard]] static std::string_view Retire(std::unique_ptr<Retired> owner);
  // Destroys the kept owners of every device where no capture is in sight
  // (`stream`, on the current device, checked too). One relaxed load when
  // none are kept.
  static void Drain(cudaStream_t stream = nullptr) {
    if (kept_.load(std::memory_order_relaxed) != 0) DrainKept(stream);
  }
  // How many owners are kept now.
  static size_t Kept() { return kept_.load(std::memory_order_relaxed); }

 private:
  static void DrainKept(cudaStream_t stream);
  static inline std::atomic<size_t> kept_{0};
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_RETIRED_OWNERS_H_
