// SPDX-License-Identifier: Apache-2.0
// Method::Precapture in MethodInstance: the warmups and captures a method
// would do on its first calls, done before traffic, so its first Run of
// each captured signature replays. Under on_new_shape=pad with listed
// buckets, every bucket is captured, largest first, from rows [0, B) of the
// given tensors. Its launches are not calls: `calls`, `warmup_calls` and
// `replays` do not count them; `captures` and `precaptures` count the graphs.
#include <chrono>
#include <string>

#include "encore/policy/pad_policy.h"
#include "graph/method_instance.h"  // private to graph/

namespace encore {
namespace {

std::string Quoted(std::string_view name) { return "method '" + std::string(name) + "'"; }

}  // namespace

Status MethodInstance::Precapture(Args inputs, Args outputs, cudaStream_t stream) {
  LogScope log_scope(&log_, name_);
  ENCORE_RETURN_IF_ERROR(RejectReentry("Precapture"));
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(checks_.TakeFailure());
  if (votes_.several_ranks() && !votes_.flags_compared()) {
    if (std::string why = votes_.CompareFlags(flags_); !why.empty()) TurnGraphsOff(std::move(why), counters_.calls);
  }
  ENCORE_RETURN_IF_ERROR(ValidateArgs(inputs, outputs));
  NvtxScope range(nvtx_, NvtxRange::kPrecapture);
  // The batch sizes to capture, largest first; {0}: the call's own shape.
  std::vector<int64_t> sizes = {0};
  if (pad_) {
    ENCORE_ASSIGN_OR_RETURN(const int64_t batch, CallBatch(name_, inputs, outputs));
    ENCORE_RETURN_IF_ERROR(CheckRowsArePrefix(name_, inputs, outputs));
    if (flags_.buckets.empty()) {
      // Learned buckets: those learned so far that the tensors hold, or the
      // given batch as the first bucket until the learner's first review.
      if (buckets_.empty() && batch > 0) buckets_ = {batch};
      sizes.clear();
      for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
        if (*it <= batch) sizes.push_back(*it);
      }
      if (sizes.empty()) return OkStatus();
    } else {
      if (batch < flags_.buckets.back()) {
        return InvalidArgumentError(Quoted(name_) + ": Precapture under on_new_shape=pad captures every bucket from "
                                    "rows [0, B) of the given tensors, so they need at least the largest bucket's " +
                                    std::to_string(flags_.buckets.back()) + " rows; they have " +
                                    std::to_string(batch));
      }
      sizes.assign(flags_.buckets.rbegin(), flags_.buckets.rend());
    }
  }
  if (!flags_.graphs || graphs_off_) {
    log_.Info("precapture", {{"method", name_}, {"graphs", 0}, {"skipped", graphs_off_reason_}});
    return OkStatus();
  }
  std::vector<TensorRef> in_views, out_views;
  auto views = [&](int64_t rows) {
    if (rows == 0) return PaddedArgs{inputs, outputs};
    PaddedViews(inputs, rows, &in_views);
    PaddedViews(outputs, rows, &out_views);
    return PaddedArgs{in_views, out_views};
  };
  // Warmups on the largest batch: its eager scratch is the arena's reserve.
  while (warmups_done_ < flags_.warmup_calls) {
    const PaddedArgs w = views(sizes.front());
    NvtxScope warm(nvtx_, NvtxRange::kWarmup);
    ++warmups_done_;
    ENCORE_RETURN_IF_ERROR(RunEager(w.inputs, w.outputs, stream, CallKind::kWarmup, counters_.calls));
  }
  if (phase_ == MethodPhase::kWarmup) SetPhase(MethodPhase::kCapture, counters_.calls);
  const size_t n = sizes.size();
  for (size_t i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const PaddedArgs g = views(sizes[i]);
    const std::string progress = std::to_string(i + 1) + "/" + std::to_string(n);
    const size_t match = cache_.Find(g.inputs, g.outputs);
    Action action = Decide(DecisionInput{&flags_, graphs_off_, warmups_done_, !cache_.empty(), match < cache_.size()});
    if (action == Action::kReplay) {
      log_.Info("precapture", {{"method", name_}, {"graph", progress}, {"bucket", sizes[i]}, {"already", true}});
      continue;
    }
    if (action == Action::kRefuse) return Refuse(inputs, outputs);
    if (action == Action::kEagerOnce) {
      // on_new_shape=eager keeps the graph it has; a precapture adds none.
      log_.Info("precapture", {{"method", name_}, {"graph", progress}, {"skipped", "on_new_shape=eager"}});
      continue;
    }
    action = VetoCapture(action);
    if (action == Action::kEager) break;
    if (!MakeRoomForCapture(g.inputs, g.outputs, counters_.calls)) {
      log_.Info("precapture", {{"method", name_}, {"graph", progress}, {"bucket", sizes[i]}, {"skipped", "over_budget"}});
      continue;
    }
    if (pad_) ENCORE_RETURN_IF_ERROR(StageRows(sizes[i]));  // rows [0, B): nothing padded
    const int64_t captures_before = counters_.captures + counters_.recaptures;
    Status s = CaptureAndLaunch(g.inputs, g.outputs, stream, counters_.calls,
                                /*recapture=*/!pad_ && action == Action::kRecapture, pad_ ? &g : nullptr);
    SettleGraphMemory();
    if (!s.ok()) return s;
    if (counters_.captures + counters_.recaptures == captures_before) break;  // failed: graphs are off now
    ++counters_.precaptures;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (pad_) {
      log_.Info("precapture", {{"method", name_}, {"graph", progress}, {"bucket", sizes[i]}, {"us", us}});
    } else {
      log_.Info("precapture", {{"method", name_}, {"graph", progress}, {"signature", cache_.front().signature.ToString()},
                               {"us", us}});
    }
  }
  return OkStatus();
}

}  // namespace encore
