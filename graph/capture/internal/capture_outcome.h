// SPDX-License-Identifier: Apache-2.0
// What a capture call did, returned as a value: captured (with what the log
// line and the report need, and the capture launch's check still to finish),
// run eagerly (or still to run eagerly), or abandoned part way, with the
// call's status, whether graphs go off for the method and why, and the
// counts of what it made. graph/runtime turns it into counters, the
// method's phase, graphs-off decisions and log lines, in one place.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_OUTCOME_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_OUTCOME_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "encore/core/status.h"
#include "encore/graph/method_report.h"
#include "encore/graph/verify/internal/verified_launch.h"

namespace encore {

// What a capture or a replay's second look at a binding made and checked.
struct CaptureCounts {
  int64_t instantiations = 0;    // executables made with cudaGraphInstantiate
  int64_t updates_in_place = 0;  // executables updated with cudaGraphExecUpdate
  int64_t capture_failures = 0;  // pieces (or whole calls) whose capture failed
  int64_t verified_launches = 0;
  int64_t verify_failures = 0;
};

// A verified launch's result: the call's status, the reason graphs go off
// (a difference, or another rank's), what was checked.
struct VerifyOutcome {
  Status status;
  std::string graphs_off;
  CaptureCounts counts;
};

// A kept graph, for the captured (or recaptured) log line and the report.
struct CapturedGraph {
  bool recapture = false;
  bool background = false;  // recorded on the manager's worker (capture=background)
  bool updated_in_place = false;
  size_t nodes = 0;
  std::string signature;
  double us = 0;
};

// The capture launch's verification, finished once the capture is booked
// (so its lines and any graphs-off come after the captured line).
struct PendingVerify {
  std::optional<VerifiedLaunch> launch;  // nullopt: nothing to check; the ranks still vote
  Args outputs;                          // what the launch wrote, to compare
};

struct CaptureOutcome {
  enum class Kind {
    kCaptured,   // a graph is kept (some pieces may run eagerly)
    kEager,      // nothing kept; the call ran eagerly, or runs eagerly once this is booked
    kAbandoned,  // nothing kept; the call stopped part way (`status` says why)
  };
  Kind kind = Kind::kEager;
  Status status;  // the call's result
  // Graphs go off for the method, for `graphs_off` (empty for a body whose
  // stages are all eager: nothing failed, there is nothing to graph), and
  // its eager calls count under `off_code`.
  bool turn_off = false;
  std::string graphs_off;
  std::string_view off_code = eager_reason::kCaptureFailed;
  bool ran_eagerly = false;  // this call is an eager call under off_code
  // The capture failed before any piece: the call is still to run, eagerly,
  // after graphs went off (so the body sees the method as it now is).
  bool eager_run_due = false;
  CaptureCounts counts;
  CapturedGraph graph;  // kCaptured
  std::optional<PendingVerify> verify;  // kCaptured, when the capture launch is checked
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_OUTCOME_H_
