// SPDX-License-Identifier: Apache-2.0
// Verification of a method instance's graph launches (MethodFlags::verify,
// verify_every): the launch, then the same call eagerly (every stage, a
// Call of kind kEager with the same index) on snapshots of its inputs, with
// the state it changes in place rewound, then a comparison on the device. A
// mismatch returns the eager result and turns graphs off, on every rank. A
// launch that cannot be checked without applying a write twice is not
// checked (logged), never failed.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_VERIFICATION_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_VERIFICATION_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "encore/core/status.h"
#include "encore/graph/capture/internal/capture_context.h"
#include "encore/graph/capture/internal/capture_outcome.h"
#include "encore/graph/store/internal/graph_entry.h"
#include "encore/graph/verify/internal/verified_launch.h"

namespace encore {

class Verification {
 public:
  explicit Verification(CaptureContext& context) : c_(context) {}

  // Whether this launch of `g` is checked (its launch count and the
  // method's `replays` so far, this one excluded).
  bool Wanted(const GraphEntry& g, bool capture_launch, int64_t replays = 0) const;
  // Before the launch, on `stream` (joined to the last launch): the
  // snapshots, or nullopt when this launch cannot be checked (logged).
  std::optional<VerifiedLaunch> Begin(const GraphEntry& g, Args inputs, Args outputs, cudaStream_t stream,
                                      int64_t index);
  // After it: the eager re-run and comparison (v null: nothing to check,
  // but the ranks still vote). A mismatch (or another rank's) comes back as
  // the reason graphs go off.
  VerifyOutcome Finish(VerifiedLaunch* v, Args outputs, cudaStream_t stream, int64_t index);

 private:
  // The difference between the launch and its eager re-run, or empty.
  StatusOr<std::string> Check(VerifiedLaunch& v, Args outputs, cudaStream_t stream, int64_t index);
  StatusOr<std::string> Compare(VerifiedLaunch& v, Args outputs, cudaStream_t stream, int64_t index);
  void Skip(VerifiedLaunch& v, std::string_view reason, cudaStream_t stream, int64_t index);
  CaptureContext& c_;
  VerifyOutcome out_;
};

// The small device state a launch of `g` changes in place (its shims'
// generator offsets), which a second run must start from as the first did.
std::vector<DeviceStateRegion> DeviceStates(const GraphEntry& g);

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_VERIFICATION_H_
