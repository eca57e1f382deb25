// SPDX-License-Identifier: Apache-2.0
// CapturePipeline: one capture call, as separate short steps. Prepare
// (memory, events, streams; nothing captured yet), then each segment of the
// body in order: a piece is recorded (the stream capture: staging heads,
// the stages' bodies, staging tails, the completion record), finalized
// (scanned, bound, instantiated or an old executable updated in place) and
// launched once (with the direct form's probe after it); an eager stage
// runs eagerly between them. Commit keeps the graphs. A piece that fails
// runs its stages eagerly on this call, and from then on; when no piece
// is graphed, graphs go off for the method. Nothing throws once a capture
// has begun (the body's exceptions become a Status).
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_PIPELINE_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_PIPELINE_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "encore/core/internal/stream.h"
#include "encore/core/status.h"
#include "encore/graph/capture/internal/capture_context.h"
#include "encore/graph/capture/internal/capture_job.h"
#include "encore/graph/capture/internal/capture_outcome.h"
#include "encore/graph/body/internal/call_plan.h"

namespace encore {

class StreamCapture;

// One capture call as graph/runtime asks for it.
struct CaptureRequest {
  const CallPlan* plan = nullptr;
  cudaStream_t stream = nullptr;
  int64_t index = 0;
  bool recapture = false;  // the method had a graph for another signature
  bool warmed_up = false;  // warmups ran (and showed whether the body uses If/While)
  int64_t recaptures = 0;  // the method's recaptures so far
};

// A capture recorded in the background (capture=background), waiting for
// its first launch, which a later call of its signature makes: the graph
// entry (staged and instantiated; its memory held in the arena, pending
// until that launch), what the body kept with the graph, and the counts
// and time of the capture so far.
struct ReadyCapture {
  std::unique_ptr<GraphEntry> entry;
  std::vector<std::shared_ptr<void>> kept;
  CaptureCounts counts;
  double us = 0;
  bool recapture = false;
};

// What a background recording made: `ready`, or (null) the outcome of a
// capture that failed, which turns graphs off (the calls ran eagerly all
// along, so none is due to run).
// `interrupted`: CUDA invalidated the capture and the caller allowed a
// retry; graphs stay on, nothing is kept, and the signature's next call
// queues it again (`failed` is then empty).
struct BackgroundRecord {
  std::unique_ptr<ReadyCapture> ready;
  CaptureOutcome failed;
  bool interrupted = false;
};

class CapturePipeline {
 public:
  explicit CapturePipeline(CaptureContext& context) : c_(context) {}

  // Captures the call's signature, launches it (the call's result) and
  // keeps the graphs; says what happened, and what is left to do once that
  // is booked (an eager run, or the capture launch's verification).
  CaptureOutcome Run(const CaptureRequest& request);

  // --- capture=background (background_capture.cc), for a method of one
  // piece. On the call that queues the capture, on its stream: what a
  // capture cannot make while it records, made once (the completion event,
  // the device-check record, the padded rows ring, If/While's streams);
  // and the worker's stream `worker_stream` when it has none yet; nullopt,
  // or the outcome of a capture that failed before any piece.
  std::optional<CaptureOutcome> PrepareBackground(const CaptureRequest& request, Stream* worker_stream,
                                                  bool* control_ready);
  // On the manager's worker: the piece recorded on `request.stream` (the
  // instance's own) in thread-local mode, scanned, staged and instantiated
  // as capture `id`, with nothing launched and nothing run on the device.
  // `may_retry`: a capture CUDA invalidates comes back `interrupted`
  // instead of turning graphs off.
  BackgroundRecord RecordInBackground(const CaptureRequest& request, uint64_t id, bool control_ready,
                                      bool may_retry);
  // On a call of its signature: the ready capture's first launch on the
  // call's tensors. Launched, its memory is committed and the entry kept
  // (kCaptured); a launch that fails ran nothing, so graphs go off and the
  // call is due to run eagerly, as after any failed capture.
  CaptureOutcome LaunchReady(std::unique_ptr<ReadyCapture> ready, const CallPlan& plan, cudaStream_t stream,
                             int64_t index, int64_t* new_variants);

 private:
  // --- the call (capture_pipeline.cc)
  StepResult Prepare(CaptureJob& job);
  StepResult PrepareControl(CaptureJob& job);
  Status AllocateStaticBuffers(CaptureJob& job);
  Status RunSegments(CaptureJob& job);
  CaptureOutcome Commit(CaptureJob& job);
  // The call stopped part way (a step failed): nothing of it is kept.
  CaptureOutcome Abandon(CaptureJob& job, Status status);
  // Prepare failed: graphs go off, and the call is due to run eagerly.
  CaptureOutcome FailBeforeAnyPiece(CaptureJob& job, const StepFailure& f);
  void LogPhases(const CaptureJob& job, size_t nodes, double us) const;
  // A background recording that failed at `f`: logged, its memory freed.
  BackgroundRecord FailInBackground(CaptureJob& job, const StepFailure& f, bool may_retry);
  // A capture that failed as `c` before any graph launched, logged: graphs
  // go off (both ways to fail before a first launch).
  CaptureOutcome TurnOffAfter(const CaptureJob& job, const CaptureFailure& c, bool background);
  void DumpGraphs(const GraphEntry& e) const;

  // --- one piece (piece_capture.cc)
  Status CapturePiece(CaptureJob& job, const Segment& segment);
  StepResult Record(CaptureJob& job, PieceJob& pj);
  // The stages' bodies recorded, with a ConditionalCapture for their Call::
  // If and While when the capture prepared for them.
  Status RecordBody(CaptureJob& job, PieceJob& pj);
  StepResult EndRecord(CaptureJob& job, PieceJob& pj, StreamCapture& cap, Status failure);
  StepResult Finalize(CaptureJob& job, PieceJob& pj);
  // Outputs no node refers to: written outside the capture (a failure), or
  // copied in as well as out so they come back as the body leaves them.
  StepResult CheckUnreferenced(CaptureJob& job, PieceJob& pj, const std::vector<bool>& referenced, bool complete);
  StepResult Instantiate(CaptureJob& job, PieceJob& pj);
  // The direct form, built before the first launch (which then needs no
  // staged executable); false when it was not built (staged, with why).
  bool BuildDirectFirst(CaptureJob& job, PieceJob& pj);
  Status FirstLaunch(CaptureJob& job, PieceJob& pj);
  StepResult Launch(CaptureJob& job, PieceJob& pj);
  Status FailFirstLaunch(CaptureJob& job, PieceJob& pj, const StepFailure& f);
  // After the probe staged a piece built direct-first: its staged
  // executable, or the piece eager from the next call on.
  Status EnsureStagedExecutable(CaptureJob& job, PieceJob& pj);
  // Runs the piece's stages eagerly on this call (when nothing of its graph
  // ran; else returns the failure) and marks it eager from then on.
  Status FailPiece(CaptureJob& job, PieceJob& pj, const StepFailure& f);
  StagingPlan StagingPlanFor(const CaptureJob& job, const Segment& segment) const;

  CaptureContext& c_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_PIPELINE_H_
