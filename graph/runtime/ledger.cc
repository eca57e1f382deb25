// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/runtime/internal/ledger.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "encore/core/internal/log.h"

namespace encore {
namespace {

// Report's capture times: whole microseconds, at least 1 for a capture that
// happened.
int64_t CaptureMicros(double us) { return std::max<int64_t>(1, std::llround(us)); }

}  // namespace

void MethodStats::Add(const CaptureCounts& c) {
  instantiations += c.instantiations;
  updates_in_place += c.updates_in_place;
  capture_failures += c.capture_failures;
  verified_launches += c.verified_launches;
  verify_failures += c.verify_failures;
}

void MethodStats::FillReport(MethodReport& r) const {
#define ENCORE_X_(counter) r.counter = counter;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
  r.last_capture_us = last_capture_us;
  r.eager_by_reason = eager_by_reason;
}

void Ledger::CountEager(std::string_view reason) {
  ++stats.eager_calls;
  ++stats.eager_by_reason[std::string(reason)];
}

Status Ledger::Apply(CaptureOutcome out, int64_t index, bool precapture) {
  stats.Add(out.counts);
  if (out.kind == CaptureOutcome::Kind::kCaptured) {
    ++(out.graph.recapture ? stats.recaptures : stats.captures);
    // A graph the worker made is the worker's capture; the call that finds
    // it ready replays it. So under capture=background, calls = warmup
    // calls + replays + eager calls.
    if (out.graph.background) {
      ++stats.background_captures;
      ++stats.replays;
    }
    stats.last_capture_us = CaptureMicros(out.graph.us);
    stats.capture_us += stats.last_capture_us;
    LogCaptured(out.graph, index);
    graphs.SetPhase(MethodPhase::kReplay, index);
  }
  if (out.turn_off) graphs.TurnOff(out.off_code, std::move(out.graphs_off), index);
  if (out.ran_eagerly && !precapture) CountEager(out.off_code);
  return std::move(out.status);
}

Status Ledger::Apply(VerifyOutcome out, int64_t index) {
  stats.Add(out.counts);
  if (!out.graphs_off.empty()) graphs.TurnOff(eager_reason::kVerifyFailed, std::move(out.graphs_off), index);
  return std::move(out.status);
}

void Ledger::LogCaptured(const CapturedGraph& out, int64_t index) {
  if (!out.recapture) {
    info_.log.Info("captured", {{"method", info_.name}, {"call", index}, {"nodes", out.nodes},
                                {"signature", out.signature}, {"updated_in_place", out.updated_in_place},
                                {"us", out.us}});
    return;
  }
  // A server whose shapes keep changing recaptures on most calls: the first
  // line, then one a second with the count of those not logged.
  const RateLimiter::Decision d = recapture_log_limit.Admit(RateLimiter::Clock::now());
  if (!d.log) return;
  info_.log.Info("recaptured", {{"method", info_.name}, {"call", index}, {"nodes", out.nodes},
                                {"signature", out.signature}, {"updated_in_place", out.updated_in_place},
                                {"us", out.us}, {"suppressed", d.suppressed}});
}

void Ledger::LogPending() {
  if (int64_t n = refusal_log_limit.TakePending(); n > 0) {
    info_.log.Info("refused_not_logged", {{"method", info_.name}, {"count", n}});
  }
  if (int64_t n = recapture_log_limit.TakePending(); n > 0) {
    info_.log.Info("recaptured_not_logged", {{"method", info_.name}, {"count", n}});
  }
}

}  // namespace encore
