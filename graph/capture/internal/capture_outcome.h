// SPDX-License-Identifier: Apache-2.0
// What a capture call did, returned as a value: captured (with what the log
// line and the report need), run eagerly, or abandoned part way, with the
// call's status, whether graphs go off for the method and why, and the
// counts of what it made. graph/runtime turns it into counters, the
// method's phase, graphs-off decisions and log lines, in one place.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_OUTCOME_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_OUTCOME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "encore/core/status.h"
#include "encore/graph/method_report.h"

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

struct CaptureOutcome {
  enum class Kind {
    kCaptured,   // a graph is kept (some pieces may run eagerly)
    kEager,      // nothing kept; the call ran eagerly
    kAbandoned,  // nothing kept; the call stopped part way (`status` says why)
  };
  Kind kind = Kind::kEager;
  Status status;  // the call's result
  // Non-empty: graphs go off for the method with this reason, and its eager
  // calls count under `off_code`.
  std::string graphs_off;
  std::string_view off_code = eager_reason::kCaptureFailed;
  bool ran_eagerly = false;  // this call is an eager call under off_code
  CaptureCounts counts;
  // kCaptured: the graph, for the log line and the report.
  bool recapture = false;
  bool updated_in_place = false;
  size_t nodes = 0;
  std::string signature;
  double us = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_OUTCOME_H_
