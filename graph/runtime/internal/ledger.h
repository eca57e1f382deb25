// SPDX-License-Identifier: Apache-2.0
// Ledger: the one place a method instance's outcomes become counters, its
// phase, graphs-off decisions and their log lines. The steps below it
// (capture, verification, the binding's second look) return what they did
// (graph/capture/internal/capture_outcome.h); the dispatcher hands it here.
// The counters are MethodStats; MethodReport is made from them at the edge
// (MethodInstance::Report).
#ifndef ENCORE_GRAPH_RUNTIME_INTERNAL_LEDGER_H_
#define ENCORE_GRAPH_RUNTIME_INTERNAL_LEDGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "encore/core/internal/rate_limiter.h"
#include "encore/core/status.h"
#include "encore/graph/body/internal/method_info.h"
#include "encore/graph/capture/internal/capture_outcome.h"
#include "encore/graph/method_report.h"
#include "encore/graph/runtime/internal/graphs_switch.h"

namespace encore {

// A method instance's counters: MethodReport's, kept apart from it.
struct MethodStats {
#define ENCORE_X_(counter) int64_t counter = 0;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
  int64_t last_capture_us = 0;
  std::map<std::string, int64_t, std::less<>> eager_by_reason;

  void Add(const CaptureCounts& c);
  // The counters of `r` (its other fields are the caller's).
  void FillReport(MethodReport& r) const;
};

class Ledger {
 public:
  explicit Ledger(const MethodInfo& info) : graphs(info.flags, &info.name, &info.log), info_(info) {}

  // An eager call, counted under `reason` (an eager_reason code).
  void CountEager(std::string_view reason);
  // A capture call's outcome; returns the call's status. A precapture's
  // launches are not calls, so its eager run is not counted as one. What
  // the outcome leaves to do (an eager run, a verification) is the caller's.
  Status Apply(CaptureOutcome out, int64_t index, bool precapture);
  // A verified replay's outcome; returns the call's status.
  Status Apply(VerifyOutcome out, int64_t index);
  // Graphs off for `reason` (an eager_reason code and the words).
  void TurnOff(std::string_view code, std::string reason, int64_t index) {
    graphs.TurnOff(code, std::move(reason), index);
  }
  // The lines a rate limit held back, logged when the instance goes.
  void LogPending();

  MethodStats stats;
  GraphsSwitch graphs;
  int warmups_done = 0;            // since registration or the last Release
  bool constants_checked = false;  // for host memory, since the last Release
  RateLimiter refusal_log_limit;    // one refused line per second, then a count
  RateLimiter recapture_log_limit;  // likewise for recaptured lines (a server may recapture on most calls)

 private:
  void LogCaptured(const CapturedGraph& out, int64_t index);

  const MethodInfo& info_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_RUNTIME_INTERNAL_LEDGER_H_
