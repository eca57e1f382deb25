// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/binding_policy.h"

namespace encore {

BindingChoice ChooseBinding(Binding requested, const BindingFacts& facts) {
  const std::string asked = "binding=" + std::string(BindingName(requested)) + ": ";
  if (requested == Binding::kStaged) return {Binding::kStaged, "binding=staged in the method's flags"};
  if (!facts.scan_available) {
    return {Binding::kStaged,
            asked + "staged, because this build has no reference scan: the graph's kernel parameters, memcpy and "
                    "memset endpoints are not searched for the caller's buffers, so no node can be rebound to them"};
  }
  if (!facts.unsafe_reason.empty()) return {Binding::kStaged, asked + "staged, because " + facts.unsafe_reason};
  if (requested == Binding::kAuto && facts.recaptures > kAutoMaxRecapturesForDirect) {
    return {Binding::kStaged, asked + "staged, because the method has recaptured " +
                                  std::to_string(facts.recaptures) + " times (more than " +
                                  std::to_string(kAutoMaxRecapturesForDirect) +
                                  "), and a direct capture costs more than its replays save"};
  }
  if (requested == Binding::kAuto && !facts.addresses_recur && facts.rewrite_nodes > kAutoMaxRewriteNodes) {
    return {Binding::kStaged, asked + "staged, because a replay with new addresses would rewrite " +
                                  std::to_string(facts.rewrite_nodes) + " nodes (more than " +
                                  std::to_string(kAutoMaxRewriteNodes) + ") and the addresses do not recur"};
  }
  return {Binding::kDirect, asked + "direct: every reference found, rewritten and proven by the probe"};
}

}  // namespace encore
