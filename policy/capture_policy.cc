// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/capture_policy.h"

namespace encore {

Action Decide(const DecisionInput& in) {
  const Action eager_once = in.precapture ? Action::kSkip : Action::kEagerOnce;
  if (!in.flags->graphs || in.graphs_off) return in.precapture ? Action::kSkip : Action::kEager;
  if (in.warmups_done < in.flags->warmup_calls) return Action::kWarmup;
  // A batch above the largest bucket, or before any is learned, or of no
  // rows: nothing to pad it to.
  if (in.padded && !in.has_bucket) return eager_once;
  // Never slower than eager: a call its bucket would pad more than
  // max_padding allows (or than measured pays) runs eagerly, graph or not.
  if (in.padded && in.pad_eager) return eager_once;
  if (in.capture_ready) return Action::kFirstLaunch;
  if (in.capture_pending) return Action::kCapturing;
  if (!in.has_graph) return Action::kCapture;
  if (in.matching_graph) return in.precapture ? Action::kSkip : Action::kReplay;
  switch (in.flags->on_new_shape) {
    case ShapePolicy::kRefuse: return Action::kRefuse;
    case ShapePolicy::kEager: return eager_once;
    case ShapePolicy::kRecapture: return Action::kRecapture;
    // The call's bucket has no graph yet: a graph of its own, not a
    // recapture (buckets are kept side by side).
    case ShapePolicy::kPad: return Action::kCapture;
  }
  return Action::kRefuse;
}

std::string_view CaptureStepName(CaptureStep s) {
  switch (s) {
    case CaptureStep::kBegin: return "begin_capture";
    case CaptureStep::kMethod: return "method";
    case CaptureStep::kEndCapture: return "end_capture";
    case CaptureStep::kInstantiate: return "instantiate";
    case CaptureStep::kUpdate: return "update";
    case CaptureStep::kFirstLaunch: return "first_launch";
  }
  return "unknown";
}

CaptureFailure ClassifyCaptureFailure(CaptureStep step, const Status& status, bool cuda_capture_error,
                                      bool graph_launched) {
  CaptureFailure f{step, status, false, !graph_launched, {}};
  f.expected = IsCaptureRefusal(status) || cuda_capture_error;
  f.reason = std::string(CaptureStepName(step)) + ": " + std::string(status.message());
  return f;
}

}  // namespace encore
