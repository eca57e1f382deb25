// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/runtime/internal/instance_state.h"

#include <optional>
#include <utility>

#include "encore/graph/internal/messages.h"

namespace encore {
namespace {

// Why capture=background cannot apply to this method (empty: it can, or
// it was not asked for).
std::string BackgroundOffReason(const MethodInfo& info, bool several_ranks, bool has_worker) {
  if (info.flags.capture_mode != CaptureMode::kBackground || !info.flags.graphs) return {};
  if (several_ranks) return "its ranks vote on captures, which must happen in step with their calls";
  if (info.body.segments().size() != 1 || !info.body.segments().front().piece) {
    return "its body has eager stages, whose work between the pieces a capture must run";
  }
  if (!has_worker) return "no capture worker";
  return {};
}

}  // namespace

InstanceState::InstanceState(InstanceSpec spec, internal::CallHost* host)
    : info(std::move(spec.name), std::move(spec.body), spec.flags, std::move(spec.log), spec.device,
           std::move(spec.graph_dump_dir)),
      store(&info.name, std::move(spec.budget)),
      runner(this, &info.name, &info.body, host, &store.arena),
      checks(&info.name, info.flags.checks, &info.log),
      pad(info.flags),
      votes(&info.name, std::move(spec.consensus), &info.log),
      constants(std::move(spec.constants)),
      background(info.flags.capture_mode == CaptureMode::kBackground &&
                     BackgroundOffReason(info, votes.several_ranks(), spec.worker != nullptr).empty(),
                 BackgroundOffReason(info, votes.several_ranks(), spec.worker != nullptr)) {
  pad.set_measured(!votes.several_ranks());
  // The worker records while calls run: the arena is used from both.
  if (background.on()) store.arena.set_shared();
}

Status InstanceState::TakeDeviceFailure() {
  ENCORE_RETURN_IF_ERROR(checks.TakeFailure());
  if (!control.eager_runaway.empty()) {
    Status s = FailedPreconditionError(std::move(control.eager_runaway));
    control.eager_runaway.clear();
    return s;
  }
  if (!control.loops.pending()) return OkStatus();
  std::optional<LoopRecord::Runaway> r = control.loops.Take();
  if (!r) return OkStatus();
  info.log.Warn("loop_bound_reached", {{"method", info.name}, {"bound", r->bound}, {"loop", r->loop_id}});
  return LoopRunawayError(info.name, r->bound, r->seq > 0 ? checks.CallOfSequence(r->seq) : -1);
}

}  // namespace encore
