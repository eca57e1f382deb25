// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/method_flags.h"

#include <string>

namespace encore {

std::string BucketsText(const std::vector<int64_t>& buckets) {
  std::string s;
  for (size_t i = 0; i < buckets.size(); ++i) s += (i ? "|" : "") + std::to_string(buckets[i]);
  return s;
}

bool VerifiesLaunch(const MethodFlags& flags, int64_t graph_launch, int64_t replay) {
  if (flags.verify > 0 && graph_launch <= int64_t{flags.verify} + 1) return true;
  return flags.verify_every > 0 && replay > 0 && replay % flags.verify_every == 0;
}

std::string_view ShapePolicyName(ShapePolicy p) {
  switch (p) {
    case ShapePolicy::kRefuse: return "refuse";
    case ShapePolicy::kEager: return "eager";
    case ShapePolicy::kRecapture: return "recapture";
    case ShapePolicy::kPad: return "pad";
  }
  return "unknown";
}

std::string_view CheckModeName(CheckMode m) {
  switch (m) {
    case CheckMode::kRecord: return "record";
    case CheckMode::kTrap: return "trap";
    case CheckMode::kOff: return "off";
  }
  return "unknown";
}

std::string_view BindingName(Binding b) {
  switch (b) {
    case Binding::kStaged: return "staged";
    case Binding::kDirect: return "direct";
    case Binding::kAuto: return "auto";
  }
  return "unknown";
}

std::string_view CaptureModeName(CaptureMode m) {
  switch (m) {
    case CaptureMode::kForeground: return "foreground";
    case CaptureMode::kBackground: return "background";
  }
  return "unknown";
}

}  // namespace encore
