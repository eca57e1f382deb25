// SPDX-License-Identifier: Apache-2.0
// Capture in the background (capture=background): the capture pipeline's
// steps split between the call that queues a capture (PrepareBackground),
// the manager's worker that records it (RecordInBackground) and the later
// call that launches it first (LaunchReady). Note [A background capture
// runs nothing]: the worker records and instantiates; it launches no graph
// and runs none of the body's work, so the calls' results are theirs
// alone, and the rule that a graph's memory is its own only once its first
// launch succeeded holds across threads: the arena holds the capture's
// slabs (GraphArena::HoldCapture) until that launch commits them or its
// failure frees them.
#include <chrono>
#include <string>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/capture/internal/capture_pipeline.h"
#include "encore/graph/capture/internal/graph_dump.h"
#include "encore/graph/capture/internal/verification.h"
#include "encore/graph/internal/messages.h"
#include "encore/graph/store/internal/launch.h"

namespace encore {

std::optional<CaptureOutcome> CapturePipeline::PrepareBackground(const CaptureRequest& request, Stream* worker_stream,
                                                                 bool* control_ready) {
  CaptureJob job;
  job.plan = request.plan;
  job.stream = request.stream;
  job.index = request.index;
  job.warmed_up = request.warmed_up;
  job.background = true;
  Status s = c_.store.last_launch.Prepare();
  if (s.ok()) s = c_.checks.PrepareForCapture(job.stream);
  if (s.ok() && job.plan->padded()) s = c_.pad.rows().Prepare(c_.info.name);
  if (s.ok() && !*worker_stream) {
    StatusOr<Stream> made = Stream::Create();  // non-blocking: the legacy stream's work never joins it
    s = made.status();
    if (s.ok()) *worker_stream = *std::move(made);
  }
  if (!s.ok()) return FailBeforeAnyPiece(job, StepFailure{CaptureStep::kBegin, s});
  if (StepResult f = PrepareControl(job)) return FailBeforeAnyPiece(job, *f);
  *control_ready = job.control_ready;
  return std::nullopt;
}

BackgroundRecord CapturePipeline::RecordInBackground(const CaptureRequest& request, uint64_t id,
                                                     bool control_ready, bool may_retry) {
  NvtxScope range(c_.info.nvtx, NvtxRange::kCapture);
  CaptureJob job;
  job.plan = request.plan;
  job.stream = job.capture = request.stream;
  job.index = request.index;
  job.recapture = request.recapture;
  job.recaptures = request.recaptures;
  job.warmed_up = request.warmed_up;
  job.control_ready = control_ready;
  job.background = true;
  GraphEntry& e = *job.entry;
  e.id = id;
  e.signature = CallSignature::Of(job.plan->graph_inputs, job.plan->graph_outputs);
  e.pieces.resize(1);
  if (Status s = AllocateStaticBuffers(job); !s.ok()) return FailInBackground(job, StepFailure{CaptureStep::kBegin, s}, may_retry);
  job.phases.prepare = Lap(&job.lap);
  PieceJob pj;
  pj.segment = &c_.info.body.segments().front();
  pj.piece = &e.pieces[0];
  StepResult failed = Record(job, pj);
  job.phases.record += Lap(&job.lap);
  if (!failed) failed = Finalize(job, pj);
  job.phases.instantiate += Lap(&job.lap);
  if (failed) return FailInBackground(job, *failed, may_retry);
  c_.store.arena.HoldCapture();
  BackgroundRecord out;
  out.ready = std::make_unique<ReadyCapture>();
  out.ready->us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - job.t0).count();
  LogPhases(job, pj.piece->graph_nodes(), out.ready->us);
  out.ready->entry = std::move(job.entry);
  out.ready->kept = std::move(pj.kept);
  out.ready->counts = job.counts;
  out.ready->recapture = job.recapture;
  return out;
}

BackgroundRecord CapturePipeline::FailInBackground(CaptureJob& job, const StepFailure& f, bool may_retry) {
  // Frees exactly what this capture allocated, once.
  (void)c_.store.arena.AbortCapture();
  const CaptureFailure c = ClassifyCaptureFailure(f.step, NameMethod(c_.info.name, f.status), f.cuda_capture_error,
                                                  /*graph_launched=*/false);
  BackgroundRecord out;
  if (f.cuda_capture_error && !IsCaptureRefusal(f.status) && may_retry) {
    // Note [What a background capture may coincide with]
    // (graph/runtime/background.cc): another thread's device-wide sync
    // invalidates this capture as surely as the body's own sync would. A
    // body that says CUDA refused it an operation (a refusal: PyTorch's
    // .item(), say) broke the capture itself, and is not asked again.
    c_.info.log.Info("capture_interrupted", {{"method", c_.info.name},
                                             {"call", job.index},
                                             {"stage", CaptureStepName(c.step)},
                                             {"reason", c.status.message()},
                                             {"action", "captured again on the signature's next call"}});
    ClearCudaError();  // the worker's own
    out.interrupted = true;
    return out;
  }
  out.failed = TurnOffAfter(job, c, /*background=*/true);
  return out;
}

CaptureOutcome CapturePipeline::LaunchReady(std::unique_ptr<ReadyCapture> ready, const CallPlan& plan,
                                            cudaStream_t stream, int64_t index, int64_t* new_variants) {
  const auto t0 = std::chrono::steady_clock::now();
  GraphEntry& e = *ready->entry;
  PieceGraph& piece = e.pieces[0];
  CaptureOutcome out;
  out.counts = ready->counts;
  // The capture launch's verification, as a foreground capture's: its
  // snapshots on this stream, after the last launch wherever it ran.
  (void)c_.store.last_launch.Join(stream);
  Verification verification(c_);
  const bool verifying = verification.Wanted(e, /*capture_launch=*/true);
  std::optional<VerifiedLaunch> v;
  if (verifying) v = verification.Begin(e, plan.inputs, GraphOutputs(c_.info.flags, e, plan.outputs), stream, index);
  StatusOr<BoundExec> bound = piece.Bind(plan.inputs, plan.outputs, new_variants, c_.info.log, c_.info.name,
                                         e.signature);
  Status s = bound.status();
  if (s.ok() && plan.padded()) s = SetPadRows(c_.launcher(), plan.batch);
  if (s.ok()) s = LaunchGraph(c_.launcher(), *bound->exec, stream, index, bound->bumps_sequence, piece.records);
  if (!s.ok()) {
    // A launch that returned an error ran nothing: the call runs eagerly
    // once this is booked, and the capture's memory goes.
    const CaptureFailure c = ClassifyCaptureFailure(CaptureStep::kFirstLaunch, NameMethod(c_.info.name, s),
                                                    /*cuda_capture_error=*/false, /*graph_launched=*/false);
    c_.info.log.Log(c.expected ? spdlog::level::info : spdlog::level::warn, "capture_failed",
                    {{"method", c_.info.name}, {"call", index}, {"stage", CaptureStepName(c.step)},
                     {"reason", c.status.message()}, {"expected", c.expected}, {"background", true}});
    ClearCudaError();
    (void)c_.store.arena.AbortHeld(e.id);
    ++out.counts.capture_failures;
    out.turn_off = true;
    out.graphs_off = "capture failed at " + c.reason;
    out.ran_eagerly = true;
    out.eager_run_due = true;
    return out;
  }
  c_.store.arena.CommitHeld(e.id);
  piece.graphed = true;
  piece.kept = std::move(ready->kept);
  e.launches = 1;
  out.kind = CaptureOutcome::Kind::kCaptured;
  out.graph.recapture = ready->recapture;
  out.graph.background = true;
  out.graph.nodes = piece.graph_nodes();
  out.graph.signature = e.signature.ToString();
  out.graph.us = ready->us + std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (c_.info.flags.binding != Binding::kStaged) {
    c_.info.log.Info("binding", {{"method", c_.info.name}, {"call", index}, {"binding", BindingName(piece.binding.binding)},
                                 {"reason", piece.binding.reason}});
  }
  DumpGraphs(e);
  GraphEntry* kept = ready->entry.get();
  c_.store.cache.Insert(std::move(ready->entry), c_.pad.GraphCap(c_.info.flags.max_graphs));
  if (verifying) out.verify = PendingVerify{std::move(v), GraphOutputs(c_.info.flags, *kept, plan.outputs)};
  return out;
}

}  // namespace encore
