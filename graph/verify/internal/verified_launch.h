// SPDX-License-Identifier: Apache-2.0
// VerifiedLaunch: one call run twice and compared, for verification
// (MethodFlags::verify, verify_every: the graph, then the same call eagerly)
// and for the capture's probe (the staged graph, then the direct form).
// Before the first run it snapshots the call's inputs and outputs (whole
// byte spans, so an output the method reads before writing starts the
// second run as it started the first), the small device state the call
// advances in place (a shim's generator offset, the check sequence), and,
// through the ConstantGuard, the blocks of the constants calls write. After
// the first run it rewinds that state so the second starts where the first
// did; after the second it compares on the device and brings back only the
// first difference. Every step may sync: only checked launches pay for it.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_VERIFIED_LAUNCH_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_VERIFIED_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "encore/core/internal/device_memory.h"
#include "encore/core/internal/device_state.h"
#include "encore/core/internal/args.h"
#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/verify/internal/constant_guard.h"
#include "encore/graph/verify/internal/device_diff.h"

namespace encore {

// Device memory a method instance keeps from one checked launch to the
// next, so a verified replay allocates nothing (and syncs no allocation).
struct VerifyScratch {
  DeviceMemory memory;
  size_t bytes = 0;
  DeviceDiff diff;
};

class VerifiedLaunch {
 public:
  // Queued on `stream` before the first run. `guard` (null: no constant to
  // guard) saves the written blocks, within `max_guard_bytes`. A guard that
  // cannot (too much to save, a read-only constant changed) is a
  // FailedPrecondition with its reason.
  // `scratch` (null: its own) holds the snapshots' memory and the
  // comparison's; one VerifiedLaunch at a time may use it.
  static StatusOr<VerifiedLaunch> Begin(Args inputs, Args outputs, std::vector<DeviceStateRegion> regions,
                                        ConstantGuard* guard, size_t max_guard_bytes, cudaStream_t stream,
                                        VerifyScratch* scratch = nullptr);

  // More small device state to save before the first run, found after
  // Begin (a capture records the shims its pieces use as it goes).
  Status AddRegions(const std::vector<DeviceStateRegion>& regions, cudaStream_t stream);

  // Right after the first run is queued: the first of Rewind's checks,
  // queued without a wait (the host does other work meanwhile).
  Status QueueFirstCheck(cudaStream_t stream) { return guard_ ? guard_->QueueFirstPass(stream) : OkStatus(); }

  // After the first run: waits for it, then puts the state back so the
  // second run starts where the first did. Empty when it did; else why the
  // call must not run again (the first run wrote a constant outside what
  // was saved), and the first run's state stands.
  StatusOr<std::string> Rewind(cudaStream_t stream);

  // The second run's tensors: copies of the inputs and outputs as they were
  // before the first run.
  Args eager_inputs() const { return eager_inputs_; }
  Args eager_outputs() const { return eager_outputs_; }

  // After the second run: the first difference ("output 1 element 3: graph
  // 2.5, eager 3", "constant 'kv' byte 8: graph 1, eager 2"), or empty.
  // `whole_device`: wait for the whole device first (a body may launch on a
  // stream it never joined), unless an encore capture stays in flight for
  // `patience` (the sync would invalidate it): then for `stream` only.
  StatusOr<std::string> Compare(Args outputs, double tolerance, cudaStream_t stream, bool whole_device = true,
                                std::chrono::milliseconds patience = std::chrono::milliseconds(500));
  bool device_synced() const { return device_synced_; }

  // The byte every buffer FirstWritten checks was filled with.
  static constexpr unsigned char kFill = 0xFF;
  // After the second run: the first of `buffers` (each filled with kFill
  // before it; whole byte spans) that holds another byte now, as
  // "names[i] (byte 8: graph 3, eager 255)", or empty. One wait.
  StatusOr<std::string> FirstWritten(Args buffers, std::span<const std::string> names, cudaStream_t stream);

  // The first run stands: the state as it left it.
  Status KeepGraphResult(cudaStream_t stream);
  // The second stands: its outputs into the caller's (its state is there).
  Status KeepEagerResult(Args outputs, cudaStream_t stream);

 private:
  struct Slot {
    DeviceStateRegion region;
    std::byte* before = nullptr;
    std::byte* graph = nullptr;
  };
  VerifiedLaunch() = default;
  Status CopyRegions(bool to_saved, std::byte* Slot::*saved, cudaStream_t stream);
  StatusOr<DeviceDiff*> Diff(int slots, cudaStream_t stream);  // the scratch's, with at least `slots`

  std::unique_ptr<VerifyScratch> own_;  // when no scratch was given
  VerifyScratch* scratch_ = nullptr;
  std::vector<DeviceMemory> added_;  // AddRegions' copies
  std::vector<TensorRef> eager_inputs_;
  std::vector<TensorRef> eager_outputs_;
  std::vector<Slot> slots_;
  std::unique_ptr<GuardedRun> guard_;
  bool graph_saved_ = false;  // Rewind copied every region's graph state
  bool rewound_ = false;      // the guard put the constants back
  bool device_synced_ = false;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_VERIFIED_LAUNCH_H_
