// SPDX-License-Identifier: Apache-2.0
// The decisions a method makes on each call (warm up, capture, replay, run
// eagerly, recapture or refuse) and the classification of capture failures.
// Pure logic, no CUDA, so every branch is tested on CPU machines.
#ifndef ENCORE_POLICY_INTERNAL_CAPTURE_POLICY_H_
#define ENCORE_POLICY_INTERNAL_CAPTURE_POLICY_H_

#include <string>
#include <string_view>

#include "encore/core/status.h"
#include "encore/policy/method_flags.h"

namespace encore {

enum class Action {
  kEager,      // graphs are off for this method
  kWarmup,     // one of the first warmup_calls calls
  kCapture,    // first graph of the method
  kReplay,     // a kept graph matches the call
  kRecapture,  // new shape under kRecapture
  kEagerOnce,  // new shape under kEager (or a batch no bucket holds): run eagerly, keep the graphs
  kRefuse,     // new shape under kRefuse
  kSkip,       // Precapture: nothing to capture for this signature
  // capture=background:
  kCapturing,    // the call's graph is being made on the worker: run eagerly
  kFirstLaunch,  // the call's graph was made on the worker: launch it first
};

// What one call (or one signature Method::Precapture captures) finds. The
// mode is data: a padded call (on_new_shape=pad) is matched at its bucket's
// rows, and has none when no bucket holds its batch; Precapture captures
// what a call would and skips the rest.
struct DecisionInput {
  const MethodFlags* flags = nullptr;
  bool graphs_off = false;       // turned off by a failure, a host constant...
  int warmups_done = 0;          // since registration or the last Release
  bool has_graph = false;        // any graph kept
  bool matching_graph = false;   // a kept graph matches this call
  bool padded = false;           // on_new_shape=pad
  bool has_bucket = true;        // padded: a bucket holds the call's batch
  bool pad_eager = false;        // padded: the bucket's replay would be slower than eager
  // capture=background: the call's signature is queued for the worker or
  // being recorded there (pending), or its graph is ready for its first
  // launch (ready). A pending or ready graph counts in has_graph.
  bool capture_pending = false;
  bool capture_ready = false;
  bool precapture = false;       // Method::Precapture, not a call
};

// The one decision of what a call does: warm up, capture, replay, run
// eagerly, recapture, refuse (or, for Precapture, skip).
Action Decide(const DecisionInput& in);

// Where in the capture pipeline a failure happened.
enum class CaptureStep { kBegin, kMethod, kEndCapture, kInstantiate, kUpdate, kFirstLaunch };
std::string_view CaptureStepName(CaptureStep s);

struct CaptureFailure {
  CaptureStep step;
  Status status;
  // True when the method is simply not graphable (a shim refused, CUDA said
  // the capture was invalidated or a call is unsupported): logged at info.
  bool expected;
  // True when the failed graph never ran, so running the call again eagerly
  // cannot apply its work twice.
  bool retry_eagerly;
  std::string reason;  // for the report and the log: "step: message"
};

// `cuda_capture_error` is true when CUDA itself reported a capture error
// (IsCaptureError) at that step.
CaptureFailure ClassifyCaptureFailure(CaptureStep step, const Status& status, bool cuda_capture_error,
                                      bool graph_launched);

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_CAPTURE_POLICY_H_
