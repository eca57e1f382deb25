// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/runtime/internal/instance_state.h"

#include <optional>
#include <utility>

#include "encore/graph/internal/messages.h"

namespace encore {

InstanceState::InstanceState(InstanceSpec spec, internal::CallHost* host)
    : info(std::move(spec.name), std::move(spec.body), spec.flags, std::move(spec.log), spec.device,
           std::move(spec.graph_dump_dir)),
      store(&info.name, std::move(spec.budget)),
      runner(this, &info.name, &info.body, host, &store.arena),
      checks(&info.name, info.flags.checks, &info.log),
      pad(info.flags),
      votes(&info.name, std::move(spec.consensus), &info.log),
      constants(std::move(spec.constants)) {
  pad.set_measured(!votes.several_ranks());
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
