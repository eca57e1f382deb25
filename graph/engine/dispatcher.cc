// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/engine/internal/dispatcher.h"

#include <algorithm>
#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/policy/internal/pad_policy.h"
#include "encore/graph/capture/internal/capture_pipeline.h"
#include "encore/graph/capture/internal/graph_memory.h"
#include "encore/graph/internal/messages.h"

namespace encore {
namespace {

// A matching signature already implies valid tensors apart from the data
// pointers, so the fast paths validate nothing twice.
bool PointersOk(Args tensors) {
  bool ok = true;
  for (const TensorRef& t : tensors) ok &= t.data != nullptr || t.numel() == 0;
  return ok;
}

// The batch a graph of a padded method was captured for.
int64_t GraphBatch(const GraphEntry& g) {
  const auto& sig = g.signature.inputs().empty() ? g.signature.outputs() : g.signature.inputs();
  return sig.empty() || sig[0].shape.size() == 0 ? -1 : sig[0].shape[0];
}

}  // namespace

bool Dispatcher::TryReplay(Args inputs, Args outputs, cudaStream_t stream, Status* result) {
  if (p_.pad.on() || !p_.graphs.on() || p_.cache.empty() || !p_.cache.front().signature.Matches(inputs, outputs) ||
      !PointersOk(inputs) || !PointersOk(outputs)) {
    return false;
  }
  const int64_t index = ++p_.counters.calls;
  *result = Replay(p_, p_.cache.front(), CallPlan{inputs, outputs, inputs, outputs}, stream, index);
  return true;
}

Status Dispatcher::Run(Args inputs, Args outputs, cudaStream_t stream) {
  if (p_.pad.on()) return RunPadded(inputs, outputs, stream);
  Status replayed;
  if (TryReplay(inputs, outputs, stream, &replayed)) return replayed;
  return Slow(CallPlan{inputs, outputs, inputs, outputs}, stream, /*rows=*/-1);
}

Status Dispatcher::RunPadded(Args inputs, Args outputs, cudaStream_t stream) {
  CompareFlagsOnce();
  ENCORE_ASSIGN_OR_RETURN(const int64_t batch, CallBatch(p_.name, inputs, outputs));
  if (p_.graphs.on() && p_.pad.Observe(batch)) ReviewBuckets(p_.counters.calls + 1);
  const int64_t rows = p_.pad.BucketRows(batch);
  CallPlan plan{inputs, outputs, inputs, outputs, batch};
  if (rows > 0) {
    const PaddedArgs views = p_.pad.Views(inputs, outputs, rows);
    plan.graph_inputs = views.inputs;
    plan.graph_outputs = views.outputs;
  }
  if (p_.graphs.on() && rows > 0) {
    const size_t match = p_.cache.Find(plan.graph_inputs, plan.graph_outputs);
    if (match < p_.cache.size() && PointersOk(inputs) && PointersOk(outputs)) {
      const int64_t index = ++p_.counters.calls;
      p_.counters.real_rows += batch;
      p_.counters.padded_rows += rows - batch;
      return Replay(p_, p_.cache.Touch(match), plan, stream, index);
    }
  }
  return Slow(plan, stream, rows);
}

void Dispatcher::CompareFlagsOnce() {
  if (!p_.votes.several_ranks() || p_.votes.flags_compared()) return;
  if (std::string why = p_.votes.CompareFlags(p_.flags); !why.empty()) {
    p_.graphs.TurnOff(eager_reason::kRanks, std::move(why), p_.counters.calls);
  }
}

Status Dispatcher::Validate(const CallPlan& plan) const {
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(plan.inputs[i], MethodQuoted(p_.name) + ": input " + std::to_string(i)));
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(plan.outputs[i], MethodQuoted(p_.name) + ": output " + std::to_string(i)));
  }
  if (plan.padded()) ENCORE_RETURN_IF_ERROR(CheckRowsArePrefix(p_.name, plan.inputs, plan.outputs));
  return OkStatus();
}

Status Dispatcher::Slow(const CallPlan& plan, cudaStream_t stream, int64_t rows) {
  CompareFlagsOnce();
  // After a failed vote the ranks are out of step: the body's collectives
  // would never pair, so no call runs it.
  ENCORE_RETURN_IF_ERROR(p_.votes.failure());
  ENCORE_RETURN_IF_ERROR(Validate(plan));
  const bool has_bucket = !plan.padded() || rows > 0;
  const size_t match = has_bucket ? p_.cache.Find(plan.graph_inputs, plan.graph_outputs) : p_.cache.size();
  DecisionInput in{&p_.flags, !p_.graphs.on(), p_.warmups_done, !p_.cache.empty(), match < p_.cache.size()};
  in.padded = plan.padded();
  in.has_bucket = has_bucket;
  const Action action = VetoCapture(Decide(in));
  ENCORE_RETURN_IF_ERROR(p_.votes.failure());
  return Act(action, plan, stream, match, rows);
}

Status Dispatcher::Act(Action action, const CallPlan& plan, cudaStream_t stream, size_t match, int64_t rows) {
  if (action == Action::kRefuse) return Refuse(plan);
  const int64_t index = ++p_.counters.calls;
  if (plan.padded()) p_.counters.real_rows += plan.batch;
  const int64_t padding = plan.padded() && rows > 0 ? rows - plan.batch : 0;
  switch (action) {
    case Action::kWarmup:
      return Warmup(plan, stream, index);
    case Action::kReplay:
      p_.counters.padded_rows += padding;
      return Replay(p_, p_.cache.Touch(match), plan, stream, index);
    case Action::kCapture:
    case Action::kRecapture:
      p_.counters.padded_rows += padding;
      return Capture(plan, stream, index, action == Action::kRecapture);
    case Action::kEagerOnce:
      p_.log.Debug("eager_new_shape", {{"method", p_.name}, {"call", index}});
      return Eager(plan, stream, index, plan.padded() ? p_.pad.EagerReason(plan.batch) : eager_reason::kNewShape);
    case Action::kEager:
      return Eager(plan, stream, index, p_.graphs.reason_code());
    case Action::kRefuse:
    case Action::kSkip:
      break;
  }
  return InternalError(MethodQuoted(p_.name) + ": no action for this call");
}

Action Dispatcher::VetoCapture(Action action) {
  if (action != Action::kCapture && action != Action::kRecapture) return action;
  std::string veto = p_.constants_checked ? std::string() : CheckConstants();
  const bool host = !veto.empty();
  veto = p_.votes.Vote(std::move(veto), "capture");
  if (veto.empty()) return action;
  p_.graphs.TurnOff(host ? eager_reason::kHostConstant : eager_reason::kRanks, std::move(veto), p_.counters.calls);
  return Action::kEager;
}

std::string Dispatcher::CheckConstants() {
  p_.constants_checked = true;
  const std::shared_ptr<const ConstantSet::List> list = p_.constants->Get();
  if (!list->has_value()) {
    p_.log.Info("constants_unlisted",
                {{"method", p_.name},
                 {"detail", "the constants could not be listed; host-memory constants cannot be detected"}});
    return {};
  }
  for (const Constant& c : **list) {
    cudaPointerAttributes attr{};
    if (cudaError_t err = cuda().PointerGetAttributes(&attr, c.data); err != cudaSuccess) {
      ClearCudaError();
      p_.log.Warn("constant_unknown", {{"method", p_.name}, {"constant", c.name}, {"error", cudaGetErrorName(err)}});
      continue;
    }
    const char* where = nullptr;
    if (attr.type == cudaMemoryTypeHost) where = "pinned host memory";
    if (attr.type == cudaMemoryTypeUnregistered) where = "pageable host memory";
    if (where) {
      p_.log.Info("host_constant", {{"method", p_.name}, {"constant", c.name}, {"memory", where}});
      return "constant '" + c.name + "' is in " + where + "; host code that reads it would be baked into a graph";
    }
  }
  return {};
}

Status Dispatcher::Refuse(const CallPlan& plan) {
  // The most recent graph is the one the user most likely meant.
  Status guard = p_.cache.front().signature.Compare(p_.name, plan.inputs, plan.outputs);
  Status s(guard.code(), std::string(guard.message()) + RefusalRemedy(p_.name));
  ++p_.counters.refusals;
  // A server refusing every call must not log every call: the first line,
  // then one a second with the count of those not logged.
  if (RateLimiter::Decision d = p_.refusal_log_limit.Admit(RateLimiter::Clock::now()); d.log) {
    p_.log.Info("refused", {{"method", p_.name}, {"reason", s.message()}, {"suppressed", d.suppressed}});
  }
  return s;
}

Status Dispatcher::Warmup(const CallPlan& plan, cudaStream_t stream, int64_t index) {
  NvtxScope range(p_.nvtx, NvtxRange::kWarmup);
  ++p_.counters.warmup_calls;
  ++p_.warmups_done;
  // What the warmups write in the constants, for the probe and verification
  // that run a call twice later. A guard that fails only costs them.
  StatusOr<ConstantGuard*> guard = p_.WantsGuard() ? p_.Guard(stream) : StatusOr<ConstantGuard*>(nullptr);
  ConstantGuard* g = guard.ok() ? *guard : nullptr;
  if (g != nullptr && !g->BeforeCall(stream).ok()) g = nullptr;
  Status s = p_.runner.RunAll(plan.inputs, plan.outputs, stream, CallKind::kWarmup, index);
  if (g != nullptr && s.ok()) {
    if (Status learned = g->AfterCall(stream); !learned.ok()) {
      p_.log.Warn("constant_guard_failed", {{"method", p_.name}, {"call", index}, {"error", learned.message()}});
    }
  }
  if (p_.warmups_done >= p_.flags.warmup_calls) p_.graphs.SetPhase(MethodPhase::kCapture, index);
  return s;
}

Status Dispatcher::Eager(const CallPlan& plan, cudaStream_t stream, int64_t index, std::string_view reason) {
  NvtxScope range(p_.nvtx, NvtxRange::kEager);
  p_.CountEager(reason);
  ENCORE_RETURN_IF_ERROR(p_.votes.failure());
  return p_.runner.RunAll(plan.inputs, plan.outputs, stream, CallKind::kEager, index);
}

Status Dispatcher::Capture(const CallPlan& plan, cudaStream_t stream, int64_t index, bool recapture) {
  if (!MakeRoomForCapture(p_, plan.graph_inputs, plan.graph_outputs, index)) {
    p_.log.Debug("eager_over_budget", {{"method", p_.name}, {"call", index}});
    return Eager(plan, stream, index, eager_reason::kOverBudget);
  }
  Status s = CapturePipeline(p_).Run(plan, stream, index, recapture);
  SettleGraphMemory(p_);
  return s;
}

void Dispatcher::ReviewBuckets(int64_t index) {
  std::optional<std::vector<int64_t>> previous = p_.pad.Review();
  if (!previous) return;
  const std::vector<int64_t>& now = p_.pad.buckets();
  ++p_.counters.bucket_changes;
  // Graphs of buckets no longer chosen go now, so capturing the new ones
  // does not evict graphs that are still chosen.
  for (size_t i = p_.cache.size(); i-- > 0;) {
    if (!std::binary_search(now.begin(), now.end(), GraphBatch(*p_.cache.entries()[i]))) p_.cache.Erase(i);
  }
  p_.log.Info("buckets", {{"method", p_.name}, {"call", index}, {"buckets", BucketsText(now)},
                          {"previous", BucketsText(*previous)}, {"observed", p_.pad.observed()}});
}

}  // namespace encore
