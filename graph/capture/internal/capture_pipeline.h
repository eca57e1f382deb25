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

class CapturePipeline {
 public:
  explicit CapturePipeline(CaptureContext& context) : c_(context) {}

  // Captures the call's signature, launches it (the call's result) and
  // keeps the graphs; says what happened, and what is left to do once that
  // is booked (an eager run, or the capture launch's verification).
  CaptureOutcome Run(const CaptureRequest& request);

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
