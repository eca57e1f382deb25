// SPDX-License-Identifier: Apache-2.0
// Method::Precapture: the warmups and captures a method would do on its
// first calls, done before traffic, so its first Run of each captured
// signature replays. Under on_new_shape=pad with listed buckets, every
// bucket is captured, largest first, from rows [0, B) of the given tensors.
// Its launches are not calls: `calls`, `warmup_calls`, `replays` and
// `eager_calls` do not count them; `captures` and `precaptures` count the
// graphs.
#include <chrono>
#include <string>
#include <vector>

#include "encore/policy/internal/pad_policy.h"
#include "encore/graph/capture/internal/capture_pipeline.h"
#include "encore/graph/capture/internal/graph_memory.h"
#include "encore/graph/engine/internal/dispatcher.h"
#include "encore/graph/instance/internal/launch.h"
#include "encore/graph/internal/messages.h"

namespace encore {
namespace {

// The batch sizes to capture, largest first; {0}: the call's own shape.
StatusOr<std::vector<int64_t>> Sizes(InstanceParts& p, Args inputs, Args outputs) {
  if (!p.pad.on()) return std::vector<int64_t>{0};
  ENCORE_ASSIGN_OR_RETURN(const int64_t batch, CallBatch(p.name, inputs, outputs));
  ENCORE_RETURN_IF_ERROR(CheckRowsArePrefix(p.name, inputs, outputs));
  std::vector<int64_t> sizes;
  if (p.pad.learned()) {
    // Those learned so far that the tensors hold, or the given batch as the
    // first bucket until the learner's first review.
    p.pad.Seed(batch);
    for (auto it = p.pad.buckets().rbegin(); it != p.pad.buckets().rend(); ++it) {
      if (*it <= batch) sizes.push_back(*it);
    }
    return sizes;
  }
  const std::vector<int64_t>& buckets = p.flags.buckets;
  if (batch < buckets.back()) {
    return InvalidArgumentError(MethodQuoted(p.name) + ": Precapture under on_new_shape=pad captures every bucket from "
                                "rows [0, B) of the given tensors, so they need at least the largest bucket's " +
                                std::to_string(buckets.back()) + " rows; they have " + std::to_string(batch));
  }
  return std::vector<int64_t>(buckets.rbegin(), buckets.rend());
}

}  // namespace

Status Dispatcher::Precapture(Args inputs, Args outputs, cudaStream_t stream) {
  CompareFlagsOnce();
  ENCORE_RETURN_IF_ERROR(Validate(CallPlan{inputs, outputs, inputs, outputs}));
  NvtxScope range(p_.nvtx, NvtxRange::kPrecapture);
  ENCORE_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, Sizes(p_, inputs, outputs));
  if (sizes.empty()) return OkStatus();
  if (!p_.graphs.on()) {
    p_.log.Info("precapture", {{"method", p_.name}, {"graphs", 0}, {"skipped", p_.graphs.reason()}});
    return OkStatus();
  }
  // Warmups on the largest batch: its eager scratch is the arena's reserve.
  while (p_.warmups_done < p_.flags.warmup_calls) {
    const PaddedArgs w = sizes.front() == 0 ? PaddedArgs{inputs, outputs} : p_.pad.Views(inputs, outputs, sizes.front());
    NvtxScope warm(p_.nvtx, NvtxRange::kWarmup);
    ++p_.warmups_done;
    ENCORE_RETURN_IF_ERROR(p_.runner.RunAll(w.inputs, w.outputs, stream, CallKind::kWarmup, p_.counters.calls));
  }
  if (p_.graphs.phase() == MethodPhase::kWarmup) p_.graphs.SetPhase(MethodPhase::kCapture, p_.counters.calls);
  bool stop = false;
  for (size_t i = 0; i < sizes.size() && !stop; ++i) {
    const std::string progress = std::to_string(i + 1) + "/" + std::to_string(sizes.size());
    ENCORE_RETURN_IF_ERROR(PrecaptureOne(inputs, outputs, stream, sizes[i], progress, &stop));
  }
  return OkStatus();
}

Status Dispatcher::PrecaptureOne(Args inputs, Args outputs, cudaStream_t stream, int64_t rows,
                                 const std::string& progress, bool* stop) {
  const auto t0 = std::chrono::steady_clock::now();
  CallPlan plan{inputs, outputs, inputs, outputs};
  if (rows > 0) {
    const PaddedArgs views = p_.pad.Views(inputs, outputs, rows);
    // Rows [0, B) of the given tensors: nothing is padded.
    plan = CallPlan{views.inputs, views.outputs, views.inputs, views.outputs, rows};
  }
  plan.precapture = true;
  const size_t match = p_.cache.Find(plan.graph_inputs, plan.graph_outputs);
  DecisionInput in{&p_.flags, !p_.graphs.on(), p_.warmups_done, !p_.cache.empty(), match < p_.cache.size()};
  in.padded = plan.padded();
  in.precapture = true;
  Action action = Decide(in);
  if (action == Action::kRefuse) return Refuse(plan);
  if (action == Action::kSkip && match < p_.cache.size()) {
    p_.log.Info("precapture", {{"method", p_.name}, {"graph", progress}, {"bucket", rows}, {"already", true}});
    return OkStatus();
  }
  if (action == Action::kSkip) {
    // on_new_shape=eager keeps the graph it has; a precapture adds none.
    p_.log.Info("precapture", {{"method", p_.name}, {"graph", progress}, {"skipped", "on_new_shape=eager"}});
    return OkStatus();
  }
  action = VetoCapture(action);
  if (action == Action::kEager) {
    *stop = true;
    return OkStatus();
  }
  if (!MakeRoomForCapture(p_, plan.graph_inputs, plan.graph_outputs, p_.counters.calls)) {
    p_.log.Info("precapture", {{"method", p_.name}, {"graph", progress}, {"bucket", rows}, {"skipped", "over_budget"}});
    return OkStatus();
  }
  const int64_t before = p_.counters.captures + p_.counters.recaptures;
  Status s = CapturePipeline(p_).Run(plan, stream, p_.counters.calls,
                                     /*recapture=*/!plan.padded() && action == Action::kRecapture);
  SettleGraphMemory(p_);
  ENCORE_RETURN_IF_ERROR(s);
  if (p_.counters.captures + p_.counters.recaptures == before) {
    *stop = true;  // failed: graphs are off now
    return OkStatus();
  }
  ++p_.counters.precaptures;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (plan.padded()) {
    p_.log.Info("precapture", {{"method", p_.name}, {"graph", progress}, {"bucket", rows}, {"us", us}});
  } else {
    p_.log.Info("precapture", {{"method", p_.name}, {"graph", progress},
                               {"signature", p_.cache.front().signature.ToString()}, {"us", us}});
  }
  return OkStatus();
}

}  // namespace encore
