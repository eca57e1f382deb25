// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/capture_policy.h"

namespace encore {

Action Decide(const DecisionInput& in) {
  if (!in.flags->graphs || in.graphs_off) return Action::kEager;
  if (in.warmups_done < in.flags->warmup_calls) return Action::kWarmup;
  if (!in.has_graph) return Action::kCapture;
  if (in.matching_graph) return Action::kReplay;
  switch (in.flags->on_new_shape) {
    case ShapePolicy::kRefuse: return Action::kRefuse;
    case ShapePolicy::kEager: return Action::kEagerOnce;
    case ShapePolicy::kRecapture: return Action::kRecapture;
    // The call's bucket has no graph yet (graph/pad_buckets.cc asks with
    // the call padded to its bucket).
    case ShapePolicy::kPad: return Action::kRecapture;
  }
  return Action::kRefuse;
}

std::string_view CaptureStageName(CaptureStage s) {
  switch (s) {
    case CaptureStage::kBegin: return "begin_capture";
    case CaptureStage::kMethod: return "method";
    case CaptureStage::kEndCapture: return "end_capture";
    case CaptureStage::kInstantiate: return "instantiate";
    case CaptureStage::kUpdate: return "update";
    case CaptureStage::kFirstLaunch: return "first_launch";
  }
  return "unknown";
}

CaptureFailure ClassifyCaptureFailure(CaptureStage stage, const Status& status, bool cuda_capture_error,
                                      bool graph_launched) {
  CaptureFailure f{stage, status, false, !graph_launched, {}};
  f.expected = IsCaptureRefusal(status) || cuda_capture_error;
  f.reason = std::string(CaptureStageName(stage)) + ": " + std::string(status.message());
  return f;
}

}  // namespace encore
