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
#include "encore/graph/store/internal/graph_memory.h"
#include "encore/graph/runtime/internal/dispatcher.h"
#include "encore/graph/internal/messages.h"

namespace encore {
namespace {

// The batch sizes to capture, largest first; {0}: the call's own shape.
StatusOr<std::vector<int64_t>> Sizes(InstanceState& s, Args inputs, Args outputs) {
  if (!s.pad.on()) return std::vector<int64_t>{0};
  ENCORE_ASSIGN_OR_RETURN(const int64_t batch, CallBatch(s.info.name, inputs, outputs));
  ENCORE_RETURN_IF_ERROR(CheckRowsArePrefix(s.info.name, inputs, outputs));
  std::vector<int64_t> sizes;
  if (s.pad.learned()) {
    // Those learned so far that the tensors hold, or the given batch as the
    // first bucket until the learner's first review.
    s.pad.Seed(batch);
    for (auto it = s.pad.buckets().rbegin(); it != s.pad.buckets().rend(); ++it) {
      if (*it <= batch) sizes.push_back(*it);
    }
    return sizes;
  }
  const std::vector<int64_t>& buckets = s.info.flags.buckets;
  if (batch < buckets.back()) {
    return InvalidArgumentError(MethodQuoted(s.info.name) + ": Precapture under on_new_shape=pad captures every bucket from "
                                "rows [0, B) of the given tensors, so they need at least the largest bucket's " +
                                std::to_string(buckets.back()) + " rows; they have " + std::to_string(batch));
  }
  return std::vector<int64_t>(buckets.rbegin(), buckets.rend());
}

}  // namespace

Status Dispatcher::Precapture(Args inputs, Args outputs, cudaStream_t stream) {
  CompareFlagsOnce();
  ENCORE_RETURN_IF_ERROR(Validate(CallPlan{inputs, outputs, inputs, outputs}));
  NvtxScope range(s_.info.nvtx, NvtxRange::kPrecapture);
  ENCORE_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, Sizes(s_, inputs, outputs));
  if (sizes.empty()) return OkStatus();
  if (!s_.ledger.graphs.on()) {
    s_.info.log.Info("precapture", {{"method", s_.info.name}, {"graphs", 0}, {"skipped", s_.ledger.graphs.reason()}});
    return OkStatus();
  }
  // Warmups on the largest batch: its eager scratch is the arena's reserve.
  while (s_.ledger.warmups_done < s_.info.flags.warmup_calls) {
    const PaddedArgs w = sizes.front() == 0 ? PaddedArgs{inputs, outputs} : s_.pad.Views(inputs, outputs, sizes.front());
    NvtxScope warm(s_.info.nvtx, NvtxRange::kWarmup);
    ++s_.ledger.warmups_done;
    ENCORE_RETURN_IF_ERROR(s_.runner.RunAll(w.inputs, w.outputs, stream, CallKind::kWarmup, s_.ledger.stats.calls));
  }
  if (s_.ledger.graphs.phase() == MethodPhase::kWarmup) s_.ledger.graphs.SetPhase(MethodPhase::kCapture, s_.ledger.stats.calls);
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
    const PaddedArgs views = s_.pad.Views(inputs, outputs, rows);
    // Rows [0, B) of the given tensors: nothing is padded.
    plan = CallPlan{views.inputs, views.outputs, views.inputs, views.outputs, rows};
  }
  plan.precapture = true;
  size_t match = 0;
  Action action = Decide(plan, /*rows=*/plan.padded() ? rows : 0, /*first=*/0, &match);
  if (action == Action::kRefuse) return Refuse(plan);
  if (action == Action::kSkip && match < s_.store.cache.size()) {
    s_.info.log.Info("precapture",
                     {{"method", s_.info.name}, {"graph", progress}, {"bucket", rows}, {"already", true}});
    return OkStatus();
  }
  if (action == Action::kSkip) {
    // on_new_shape=eager keeps the graph it has; a precapture adds none.
    s_.info.log.Info("precapture", {{"method", s_.info.name}, {"graph", progress}, {"skipped", "on_new_shape=eager"}});
    return OkStatus();
  }
  action = VetoCapture(action);
  if (action == Action::kEager) {
    *stop = true;
    return OkStatus();
  }
  const int64_t index = s_.ledger.stats.calls;
  std::optional<CaptureOutcome> out =
      CaptureInBudget(plan, stream, index, /*recapture=*/!plan.padded() && action == Action::kRecapture);
  if (!out) {
    s_.info.log.Info("precapture",
                     {{"method", s_.info.name}, {"graph", progress}, {"bucket", rows}, {"skipped", "over_budget"}});
    return OkStatus();
  }
  const bool captured = out->kind == CaptureOutcome::Kind::kCaptured;
  ENCORE_RETURN_IF_ERROR(Book(*std::move(out), plan, stream, index));
  if (!captured) {
    *stop = true;  // failed: graphs are off now
    return OkStatus();
  }
  ++s_.ledger.stats.precaptures;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (plan.padded()) {
    s_.info.log.Info("precapture", {{"method", s_.info.name}, {"graph", progress}, {"bucket", rows}, {"us", us}});
  } else {
    s_.info.log.Info("precapture", {{"method", s_.info.name}, {"graph", progress},
                               {"signature", s_.store.cache.front().signature.ToString()}, {"us", us}});
  }
  return OkStatus();
}

}  // namespace encore
