// SPDX-License-Identifier: Apache-2.0
// VerifiedLaunch: the shadow check of one graph launch (MethodFlags::verify,
// verify_every). Before the launch it snapshots the call's inputs and
// outputs and the device state the call changes in place (listed constants,
// shims' generator offsets); after it, it puts that state back as it was
// before the launch, so the same call can run eagerly on the snapshots and
// start where the graph started, then compares the results. Internal to
// graph/. Every step may sync: only verified launches pay for it.
#ifndef ENCORE_GRAPH_VERIFIER_H_
#define ENCORE_GRAPH_VERIFIER_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "encore/core/device_memory.h"
#include "encore/core/device_state.h"
#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore {

class VerifiedLaunch {
 public:
  using Args = std::span<const TensorRef>;

  // Before the graph launch, queued on `stream`: each input and output
  // (its whole byte span, so an output the method reads before writing
  // starts the eager run as it started the graph) into scratch tensors, and
  // each region into its "before" copy. Allocates (cudaMalloc).
  static StatusOr<VerifiedLaunch> Begin(Args inputs, Args outputs, std::vector<DeviceStateRegion> regions,
                                        cudaStream_t stream);

  // After the graph launch: waits for it, keeps each region as the graph
  // left it and puts back its "before" copy, so the eager run's writes to
  // constants are not applied on top of the graph's and its generator
  // draws the numbers the graph drew.
  Status Rewind(cudaStream_t stream);

  // The eager run's tensors: copies of the inputs and outputs as they were
  // before the launch.
  Args eager_inputs() const { return eager_inputs_; }
  Args eager_outputs() const { return eager_outputs_; }

  // After the eager run: waits for the whole device (a body may launch on a
  // stream it never joined to the call's), then names the first difference:
  // "output 1 element 3: graph 2.5, eager 3" or "constant 'kv' byte 8:
  // graph 1, eager 2"; empty when there is none. Regions other than
  // generator state are compared only when `tolerance` is 0 (they are bytes).
  // `whole_device`: wait for the whole device first (verification's eager
  // re-run may leave work on streams it never joined), unless an encore
  // capture stays in flight for `patience` (the sync would invalidate it):
  // then, as when false, for `stream` only (the probe, whose both runs are
  // graph launches on it).
  StatusOr<std::string> Compare(Args outputs, double tolerance, cudaStream_t stream, bool whole_device = true,
                                std::chrono::milliseconds patience = std::chrono::milliseconds(500));
  // Whether the last Compare waited for the whole device.
  bool device_synced() const { return device_synced_; }

  // The checked launch stands: the regions as the graph left them (also
  // after a Rewind that failed part way).
  Status KeepGraphResult(cudaStream_t stream);
  // It does not: the eager outputs into the caller's (the regions already
  // hold the eager run's state).
  Status KeepEagerResult(Args outputs, cudaStream_t stream);

 private:
  struct Slot {
    DeviceStateRegion region;
    std::byte* before = nullptr;
    std::byte* graph = nullptr;
  };
  VerifiedLaunch() = default;
  Status CopyRegions(bool to_saved, std::byte* Slot::*saved, cudaStream_t stream);

  DeviceMemory memory_;
  std::vector<TensorRef> eager_inputs_;
  std::vector<TensorRef> eager_outputs_;
  std::vector<Slot> slots_;
  bool graph_saved_ = false;  // Rewind copied every region's graph state
  bool device_synced_ = false;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFIER_H_
