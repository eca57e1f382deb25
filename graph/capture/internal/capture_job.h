// SPDX-License-Identifier: Apache-2.0
// What one capture call has made so far (CaptureJob), and one piece of it
// (PieceJob), passed from step to step of the capture pipeline.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_JOB_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_JOB_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/graph/internal/graph.h"
#include "encore/graph/method_report.h"
#include "encore/policy/internal/capture_policy.h"
#include "encore/graph/capture/internal/binding_choice.h"
#include "encore/graph/binding/internal/direct_form.h"
#include "encore/graph/control/internal/graph_walk.h"
#include "encore/graph/body/internal/call_plan.h"
#include "encore/graph/capture/internal/capture_outcome.h"
#include "encore/graph/store/internal/graph_entry.h"
#include "encore/graph/body/internal/method_body.h"
#include "encore/graph/internal/lap.h"
#include "encore/graph/verify/internal/verified_launch.h"

namespace encore {

// Where a capture call's time went, microseconds summed over its pieces
// (logged at debug as capture_phases), so a slow capture can be pinned on a
// step. Eager stages between pieces and verification's start are left out.
// The last six are parts of build_direct and probe_finish, not more time,
// except that probe_bind also holds the bind made right after the launch.
struct CapturePhases {
#define ENCORE_CAPTURE_PHASES_(X)                                                                              \
  X(prepare) X(record) X(scan) X(instantiate) X(probe_begin) X(first_launch) X(build_direct) X(probe_finish)    \
  X(direct_clone) X(direct_instantiate) X(probe_wait) X(probe_bind) X(probe_run) X(probe_keep)
#define ENCORE_X_(name) double name = 0;
  ENCORE_CAPTURE_PHASES_(ENCORE_X_)
#undef ENCORE_X_
};

struct CaptureJob {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point lap = t0;  // the end of the last phase timed
  CapturePhases phases;
  const CallPlan* plan = nullptr;
  cudaStream_t stream = nullptr;   // the caller's
  cudaStream_t capture = nullptr;  // the stream the capture records
  int64_t index = 0;
  bool recapture = false;
  int64_t recaptures = 0;  // the method's so far
  bool warmed_up = false;
  CaptureCounts counts;
  std::unique_ptr<GraphEntry> entry = std::make_unique<GraphEntry>();
  // Where head nodes tell tail nodes the caller's output addresses; for a
  // padded graph also how many bytes of each to copy out, and the launch's
  // number in the rows ring.
  void** out_table = nullptr;
  uint64_t* out_bytes = nullptr;
  uint64_t* launch_slot = nullptr;
  bool updated_in_place = false;
  bool control_ready = false;  // body streams and the loop record exist
  // Recorded on the manager's worker (capture=background): nothing is
  // launched or run on the device, and the method's other graphs may be
  // replaying on the static buffers' memory meanwhile.
  bool background = false;
  // Verification of the whole call (every segment) against an eager run.
  bool verifying = false;
  std::optional<VerifiedLaunch> verify;
  int graphed = 0;  // pieces whose graph launched
  // The first piece failure, and the eager_reason its calls count under
  // when no piece is graphed.
  std::string failure;
  std::string_view failure_code = eager_reason::kCaptureFailed;
};

struct PieceJob {
  const Segment* segment = nullptr;
  PieceGraph* piece = nullptr;
  std::optional<Graph> graph;
  StagedNodes nodes;
  int64_t checks_before = 0;  // DeviceChecks::graph_checks() before the body
  ConditionalBodies bodies;   // of the conditional nodes Call::If and While made
  bool body_capture_broken = false;  // ConditionalCapture::body_capture_broken
  // The graph holds memory allocation or free nodes (the scan saw them):
  // CUDA lets it have one executable at a time.
  bool memory_nodes = false;
  // What building the direct form needs, when it was chosen: built before
  // the first launch, or (after a recapture adopted a staged executable)
  // while the staged graph's first launch runs.
  std::optional<BindingInput> direct;
  // The direct form was built before the first launch, which runs its
  // first executable between the staged heads and tails; the staged graph
  // has no executable yet.
  bool direct_first = false;
  std::vector<std::shared_ptr<void>> kept;
};

struct StepFailure {
  CaptureStep step = CaptureStep::kBegin;
  Status status;
  bool cuda_capture_error = false;
  // The body's work was launched (its result stands): no eager retry.
  bool graph_launched = false;
};
using StepResult = std::optional<StepFailure>;  // nullopt: the step succeeded

inline StepResult Failed(CaptureStep step, Status s, bool cuda_capture_error = false) {
  return StepFailure{step, std::move(s), cuda_capture_error};
}

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_JOB_H_
