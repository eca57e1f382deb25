// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/runtime/internal/graphs_switch.h"

#include "encore/core/internal/log.h"

namespace encore {

MethodPhase StartingPhase(const MethodFlags& flags) {
  if (!flags.graphs) return MethodPhase::kEager;
  return flags.warmup_calls > 0 ? MethodPhase::kWarmup : MethodPhase::kCapture;
}

GraphsSwitch::GraphsSwitch(const MethodFlags& flags, const std::string* method, const EventLog* log)
    : method_(method), log_(log), phase_(StartingPhase(flags)) {
  if (!flags.graphs) {
    off_ = true;
    reason_ = kGraphsOffByFlags;
    code_ = eager_reason::kGraphsOff;
  }
}

void GraphsSwitch::SetPhase(MethodPhase to, int64_t call) {
  if (to == phase_) return;
  const MethodPhase from = phase_;
  // Set before logging: a logger that fails must not leave the phase behind.
  phase_ = to;
  log_->Info("phase", {{"method", *method_}, {"from", MethodPhaseName(from)}, {"to", MethodPhaseName(to)},
                       {"call", call}});
}

void GraphsSwitch::TurnOff(std::string_view code, std::string reason, int64_t call) {
  off_ = true;
  reason_ = std::move(reason);
  code_ = code;
  SetPhase(MethodPhase::kEager, call);
  log_->Info("graphs_off", {{"method", *method_}, {"reason", reason_}, {"call", call}});
}

void GraphsSwitch::Restart(const MethodFlags& flags, int64_t call) {
  if (!off_) SetPhase(StartingPhase(flags), call);
}

}  // namespace encore
