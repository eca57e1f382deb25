// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/runtime/internal/dispatcher.h"

#include <algorithm>
#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/policy/internal/pad_policy.h"
#include "encore/graph/capture/internal/capture_pipeline.h"
#include "encore/graph/capture/internal/verification.h"
#include "encore/graph/store/internal/graph_memory.h"
#include "encore/graph/internal/messages.h"

namespace encore {
namespace {

// The batch a graph of a padded method was captured for.
int64_t GraphBatch(const GraphEntry& g) {
  const auto& sig = g.signature.inputs().empty() ? g.signature.outputs() : g.signature.inputs();
  return sig.empty() || sig[0].shape.size() == 0 ? -1 : sig[0].shape[0];
}

}  // namespace

Status Dispatcher::Run(Args inputs, Args outputs, cudaStream_t stream, FastPath tried) {
  if (s_.pad.on()) return RunPadded(inputs, outputs, stream);
  // The signature is compared once per call: a graph the fast path found
  // different is not compared again.
  const size_t first = tried == FastPath::kOtherShape ? 1 : 0;
  return Dispatch(CallPlan{inputs, outputs, inputs, outputs}, stream, /*rows=*/-1, first);
}

Status Dispatcher::RunPadded(Args inputs, Args outputs, cudaStream_t stream) {
  CompareFlagsOnce();
  ENCORE_ASSIGN_OR_RETURN(const int64_t batch, CallBatch(s_.info.name, inputs, outputs));
  if (s_.ledger.graphs.on() && s_.pad.Observe(batch)) ReviewBuckets(s_.ledger.stats.calls + 1);
  const int64_t rows = s_.pad.BucketRows(batch);
  CallPlan plan{inputs, outputs, inputs, outputs, batch};
  if (rows > 0) {
    const PaddedArgs views = s_.pad.Views(inputs, outputs, rows);
    plan.graph_inputs = views.inputs;
    plan.graph_outputs = views.outputs;
  }
  // Never slower than eager: a call its bucket would pad too much takes
  // the slow path, which runs it eagerly (reason padding). Decided once,
  // here: Decide reads the plan.
  plan.pad_eager = s_.ledger.graphs.on() && rows > 0 && s_.pad.EagerInstead(batch, rows);
  if (s_.ledger.graphs.on() && rows > 0 && !plan.pad_eager) {
    const size_t match = s_.store.cache.Find(plan.graph_inputs, plan.graph_outputs);
    if (match < s_.store.cache.size() && PointersOk(inputs) && PointersOk(outputs)) {
      const int64_t index = ++s_.ledger.stats.calls;
      return PaddedReplay(s_.store.cache.Touch(match), plan, stream, index, rows);
    }
  }
  return Dispatch(plan, stream, rows, /*first=*/0);
}

Status Dispatcher::PaddedReplay(GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index,
                                int64_t rows) {
  // real_rows and padded_rows count the calls a padded graph answers.
  s_.ledger.stats.real_rows += plan.batch;
  s_.ledger.stats.padded_rows += rows - plan.batch;
  const bool timed = s_.pad.StartTiming(stream, /*replay=*/true, rows);
  const int64_t variants = s_.ledger.stats.exec_variants;
  Status s = Replay(g, plan, stream, index);
  // A replay that made an executable (an address set seen again) paid its
  // instantiation and first upload once: not what the bucket's replays cost.
  if (timed) s_.pad.StopTiming(stream, s.ok() && s_.ledger.stats.exec_variants == variants);
  return s;
}

void Dispatcher::CompareFlagsOnce() {
  if (!s_.votes.several_ranks() || s_.votes.flags_compared()) return;
  if (std::string why = s_.votes.CompareFlags(s_.info.flags); !why.empty()) {
    s_.ledger.TurnOff(eager_reason::kRanks, std::move(why), s_.ledger.stats.calls);
  }
}

Status Dispatcher::Validate(const CallPlan& plan) const {
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(plan.inputs[i], MethodQuoted(s_.info.name) + ": input " + std::to_string(i)));
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(plan.outputs[i], MethodQuoted(s_.info.name) + ": output " + std::to_string(i)));
  }
  if (plan.padded()) ENCORE_RETURN_IF_ERROR(CheckRowsArePrefix(s_.info.name, plan.inputs, plan.outputs));
  return OkStatus();
}

Action Dispatcher::Decide(const CallPlan& plan, int64_t rows, size_t first, size_t* match) const {
  const bool has_bucket = !plan.padded() || rows > 0;
  *match = has_bucket ? s_.store.cache.Find(plan.graph_inputs, plan.graph_outputs, first) : s_.store.cache.size();
  DecisionInput in{&s_.info.flags, !s_.ledger.graphs.on(), s_.ledger.warmups_done, !s_.store.cache.empty(),
                   *match < s_.store.cache.size()};
  in.padded = plan.padded();
  in.has_bucket = has_bucket;
  in.pad_eager = plan.padded() && rows > 0 && plan.pad_eager;
  FillBackground(plan, *match, in);
  in.precapture = plan.precapture;
  return encore::Decide(in);
}

Status Dispatcher::Dispatch(const CallPlan& plan, cudaStream_t stream, int64_t rows, size_t first) {
  CompareFlagsOnce();
  // After a failed vote the ranks are out of step: the body's collectives
  // would never pair, so no call runs it.
  ENCORE_RETURN_IF_ERROR(s_.votes.failure());
  ENCORE_RETURN_IF_ERROR(Validate(plan));
  size_t match = 0;
  const Action action = VetoCapture(Decide(plan, rows, first, &match));
  ENCORE_RETURN_IF_ERROR(s_.votes.failure());
  return CarryOut(action, plan, stream, match, rows);
}

Status Dispatcher::CarryOut(Action action, const CallPlan& plan, cudaStream_t stream, size_t match, int64_t rows) {
  if (action == Action::kRefuse) return Refuse(plan);
  const int64_t index = ++s_.ledger.stats.calls;
  switch (action) {
    case Action::kWarmup:
      return Warmup(plan, stream, index);
    case Action::kReplay:
      if (plan.padded()) return PaddedReplay(s_.store.cache.Touch(match), plan, stream, index, rows);
      return Replay(s_.store.cache.Touch(match), plan, stream, index);
    case Action::kCapture:
    case Action::kRecapture:
      if (s_.background.on()) return CaptureInBackground(plan, stream, index, action == Action::kRecapture);
      return Capture(plan, stream, index, action == Action::kRecapture, rows);
    case Action::kCapturing:
      return Eager(plan, stream, index, eager_reason::kCapturing);
    case Action::kFirstLaunch:
      return FirstLaunch(plan, stream, index, rows);
    case Action::kEagerOnce:
      s_.info.log.Debug("eager_new_shape", {{"method", s_.info.name}, {"call", index}});
      return Eager(plan, stream, index, plan.padded() ? s_.pad.EagerReason(plan.batch) : eager_reason::kNewShape);
    case Action::kEager:
      return Eager(plan, stream, index, s_.ledger.graphs.reason_code());
    case Action::kRefuse:
    case Action::kSkip:
      break;
  }
  return InternalError(MethodQuoted(s_.info.name) + ": no action for this call");
}

Action Dispatcher::VetoCapture(Action action) {
  if (action != Action::kCapture && action != Action::kRecapture) return action;
  std::string veto = s_.ledger.constants_checked ? std::string() : CheckConstants();
  const bool host = !veto.empty();
  veto = s_.votes.Vote(std::move(veto), "capture");
  if (veto.empty()) return action;
  s_.ledger.TurnOff(host ? eager_reason::kHostConstant : eager_reason::kRanks, std::move(veto), s_.ledger.stats.calls);
  return Action::kEager;
}

std::string Dispatcher::CheckConstants() {
  s_.ledger.constants_checked = true;
  const std::shared_ptr<const ConstantSet::List> list = s_.constants.List();
  if (!list->has_value()) {
    s_.info.log.Info("constants_unlisted",
                {{"method", s_.info.name},
                 {"detail", "the constants could not be listed; host-memory constants cannot be detected"}});
    return {};
  }
  for (const Constant& c : **list) {
    cudaPointerAttributes attr{};
    if (cudaError_t err = cuda().PointerGetAttributes(&attr, c.data); err != cudaSuccess) {
      ClearCudaError();
      s_.info.log.Warn("constant_unknown", {{"method", s_.info.name}, {"constant", c.name}, {"error", cudaGetErrorName(err)}});
      continue;
    }
    const char* where = nullptr;
    if (attr.type == cudaMemoryTypeHost) where = "pinned host memory";
    if (attr.type == cudaMemoryTypeUnregistered) where = "pageable host memory";
    if (where) {
      s_.info.log.Info("host_constant", {{"method", s_.info.name}, {"constant", c.name}, {"memory", where}});
      return "constant '" + c.name + "' is in " + where + "; host code that reads it would be baked into a graph";
    }
  }
  return {};
}

Status Dispatcher::Refuse(const CallPlan& plan) {
  // The most recent graph is the one the user most likely meant (or, none
  // launched yet, the first one the worker was given).
  const CallSignature& kept =
      s_.store.cache.empty() ? s_.background.front_signature() : s_.store.cache.front().signature;
  Status guard = kept.Compare(s_.info.name, plan.inputs, plan.outputs);
  Status s(guard.code(), std::string(guard.message()) + RefusalRemedy(s_.info.name));
  ++s_.ledger.stats.refusals;
  // A server refusing every call must not log every call: the first line,
  // then one a second with the count of those not logged.
  if (RateLimiter::Decision d = s_.ledger.refusal_log_limit.Admit(RateLimiter::Clock::now()); d.log) {
    s_.info.log.Info("refused", {{"method", s_.info.name}, {"reason", s.message()}, {"suppressed", d.suppressed}});
  }
  return s;
}

Status Dispatcher::Warmup(const CallPlan& plan, cudaStream_t stream, int64_t index) {
  NvtxScope range(s_.info.nvtx, NvtxRange::kWarmup);
  const bool timed = plan.padded() && s_.pad.StartTiming(stream, /*replay=*/false, plan.batch);
  Status s = WarmupRun(plan, stream, index);
  if (timed) s_.pad.StopTiming(stream, s.ok());
  return s;
}

Status Dispatcher::WarmupRun(const CallPlan& plan, cudaStream_t stream, int64_t index) {
  ++s_.ledger.stats.warmup_calls;
  ++s_.ledger.warmups_done;
  // What the warmups write in the constants, for the probe and verification
  // that run a call twice later. A guard that fails only costs them.
  const bool guarded = s_.constants.WantsGuard(s_.info.flags, s_.ledger.graphs.on());
  StatusOr<ConstantGuard*> guard = guarded ? s_.constants.Guard(stream) : StatusOr<ConstantGuard*>(nullptr);
  ConstantGuard* g = guard.ok() ? *guard : nullptr;
  if (g != nullptr && !g->BeforeCall(stream).ok()) g = nullptr;
  Status s = s_.runner.RunAll(plan.inputs, plan.outputs, stream, CallKind::kWarmup, index);
  if (g != nullptr && s.ok()) {
    if (Status learned = g->AfterCall(stream); !learned.ok()) {
      s_.info.log.Warn("constant_guard_failed",
                       {{"method", s_.info.name}, {"call", index}, {"error", learned.message()}});
    }
  }
  if (s_.ledger.warmups_done >= s_.info.flags.warmup_calls) s_.ledger.graphs.SetPhase(MethodPhase::kCapture, index);
  return s;
}

Status Dispatcher::Eager(const CallPlan& plan, cudaStream_t stream, int64_t index, std::string_view reason) {
  NvtxScope range(s_.info.nvtx, NvtxRange::kEager);
  s_.ledger.CountEager(reason);
  ENCORE_RETURN_IF_ERROR(s_.votes.failure());
  // A padded method's eager runs are what its padded replays are measured
  // against (graph/pad/internal/padding.h).
  const bool timed = plan.padded() && s_.ledger.graphs.on() && s_.pad.StartTiming(stream, /*replay=*/false, plan.batch);
  Status s = s_.runner.RunAll(plan.inputs, plan.outputs, stream, CallKind::kEager, index);
  if (timed) s_.pad.StopTiming(stream, s.ok());
  return s;
}

std::optional<CaptureOutcome> Dispatcher::CaptureInBudget(const CallPlan& plan, cudaStream_t stream, int64_t index,
                                                         bool recapture) {
  const size_t reserve = CaptureReserveBytes(s_.store, plan.graph_inputs, plan.graph_outputs,
                                             s_.info.flags.copy_outputs, s_.pad.on());
  const Room room = MakeRoomForCapture(s_.store, s_.info, reserve, index);
  s_.ledger.stats.budget_drops += room.dropped;
  if (!room.fits) {
    ++s_.ledger.stats.over_budget_calls;
    return std::nullopt;
  }
  s_.ledger.graphs.SetPhase(MethodPhase::kCapture, index);
  CaptureRequest request{&plan, stream, index, recapture, s_.ledger.warmups_done > 0, s_.ledger.stats.recaptures};
  CaptureOutcome out = CapturePipeline(s_.context).Run(request);
  SettleGraphMemory(s_.store);
  return out;
}

Status Dispatcher::Capture(const CallPlan& plan, cudaStream_t stream, int64_t index, bool recapture, int64_t rows) {
  if (!s_.background.off_reason().empty() && !s_.background.off_logged) {
    s_.background.off_logged = true;
    s_.info.log.Info("capture_foreground", {{"method", s_.info.name}, {"reason", s_.background.off_reason()}});
  }
  std::optional<CaptureOutcome> out = CaptureInBudget(plan, stream, index, recapture);
  if (!out) {
    s_.info.log.Debug("eager_over_budget", {{"method", s_.info.name}, {"call", index}});
    return Eager(plan, stream, index, eager_reason::kOverBudget);
  }
  if (plan.padded() && out->kind == CaptureOutcome::Kind::kCaptured) {
    // The capture launch answered the call with the padded graph.
    s_.ledger.stats.real_rows += plan.batch;
    s_.ledger.stats.padded_rows += rows - plan.batch;
  }
  return Book(*std::move(out), plan, stream, index);
}

Status Dispatcher::Book(CaptureOutcome out, const CallPlan& plan, cudaStream_t stream, int64_t index) {
  const bool eager_run_due = out.eager_run_due;
  std::optional<PendingVerify> verify = std::move(out.verify);
  Status s = s_.ledger.Apply(std::move(out), index, plan.precapture);
  if (eager_run_due) {
    s = s_.runner.RunAll(plan.inputs, plan.outputs, stream, CallKind::kEager, index);
    if (!s.ok()) s_.info.log.Error("eager_failed", {{"method", s_.info.name}, {"call", index}, {"error", s.ToString()}});
  } else if (verify) {
    VerifiedLaunch* launch = verify->launch ? &*verify->launch : nullptr;
    s = s_.ledger.Apply(Verification(s_.context).Finish(launch, verify->outputs, stream, index), index);
  }
  if (!s_.ledger.graphs.on()) GraphsWentOff();
  return s;
}

void Dispatcher::ReviewBuckets(int64_t index) {
  std::optional<std::vector<int64_t>> previous = s_.pad.Review();
  if (!previous) return;
  const std::vector<int64_t>& now = s_.pad.buckets();
  ++s_.ledger.stats.bucket_changes;
  // Graphs of buckets no longer chosen go now, so capturing the new ones
  // does not evict graphs that are still chosen.
  for (size_t i = s_.store.cache.size(); i-- > 0;) {
    if (!std::binary_search(now.begin(), now.end(), GraphBatch(*s_.store.cache.entries()[i]))) s_.store.cache.Erase(i);
  }
  s_.info.log.Info("buckets", {{"method", s_.info.name}, {"call", index}, {"buckets", BucketsText(now)},
                          {"previous", BucketsText(*previous)}, {"observed", s_.pad.observed()}});
}

}  // namespace encore
