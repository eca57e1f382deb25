// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/instance/internal/instance_parts.h"

#include <utility>

#include "encore/core/internal/cuda_api.h"

namespace encore {

InstanceParts::InstanceParts(InstanceSpec spec, internal::CallHost* host)
    : name(std::move(spec.name)),
      body(std::move(spec.body)),
      flags(spec.flags),
      log(std::move(spec.log)),
      device(spec.device),
      graph_dump_dir(std::move(spec.graph_dump_dir)),
      constants(std::move(spec.constants)),
      votes(&name, std::move(spec.consensus), &log),
      budget{std::move(spec.budget)},
      runner(this, &name, &body, host, &arena) {
  counters.name = name;
}

void InstanceParts::CountEager(std::string_view reason) {
  ++counters.eager_calls;
  ++counters.eager_by_reason[std::string(reason)];
}

bool InstanceParts::WantsGuard() const {
  const bool twice = flags.binding != Binding::kStaged || flags.verify > 0 || flags.verify_every > 0;
  if (!twice || !graphs.on()) return false;
  const std::shared_ptr<const ConstantSet::List> list = constants->Get();
  return list->has_value() && !(*list)->empty();
}

StatusOr<ConstantGuard*> InstanceParts::Guard(cudaStream_t stream) {
  std::shared_ptr<const ConstantSet::List> list = constants->Get();
  if (!list->has_value() || (*list)->empty()) return static_cast<ConstantGuard*>(nullptr);
  if (guard && guarded == list) return guard.get();
  guard.reset();
  ENCORE_ASSIGN_OR_RETURN(guard, ConstantGuard::Create(**list, stream));
  guarded = std::move(list);
  return guard.get();
}

Status InstanceParts::TakeDeviceFailure() {
  ENCORE_RETURN_IF_ERROR(checks.TakeFailure());
  if (!eager_runaway.empty()) {
    Status s = FailedPreconditionError(std::move(eager_runaway));
    eager_runaway.clear();
    return s;
  }
  if (!loops.pending()) return OkStatus();
  std::optional<LoopRecord::Runaway> r = loops.Take();
  if (!r) return OkStatus();
  log.Warn("loop_bound_reached", {{"method", name}, {"bound", r->bound}, {"loop", r->loop_id}});
  return LoopRunawayError(name, r->bound, r->seq > 0 ? checks.CallOfSequence(r->seq) : -1);
}

size_t InstanceParts::GuardBudget() const {
  size_t free = 0, total = 0;
  if (cuda().MemGetInfo(&free, &total) != cudaSuccess) {
    ClearCudaError();
    return 0;
  }
  return free / 4;
}

}  // namespace encore
