// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/capture/internal/capture_pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/capture/internal/graph_dump.h"
#include "encore/graph/control/internal/conditional_support.h"
#include "encore/graph/store/internal/graph_memory.h"
#include "encore/graph/store/internal/launch.h"
#include "encore/graph/internal/messages.h"
#include "encore/graph/capture/internal/verification.h"

namespace encore {
namespace {

bool IsLegacyDefault(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

}  // namespace

CaptureOutcome CapturePipeline::Run(const CaptureRequest& request) {
  NvtxScope range(c_.info.nvtx, NvtxRange::kCapture);
  const CallPlan& plan = *request.plan;
  CaptureJob job;
  job.plan = &plan;
  job.stream = request.stream;
  job.index = request.index;
  job.recapture = request.recapture;
  job.recaptures = request.recaptures;
  job.warmed_up = request.warmed_up;
  if (StepResult f = Prepare(job)) return FailBeforeAnyPiece(job, *f);
  job.phases.prepare = Lap(&job.lap);
  // The snapshots are taken on this stream, after the last launch wherever
  // it ran. A join that fails here fails again at the launch, which answers.
  (void)c_.store.last_launch.Join(job.stream);
  Verification verification(c_);
  job.verifying = verification.Wanted(*job.entry, /*capture_launch=*/true);
  if (job.verifying) {
    job.verify = verification.Begin(*job.entry, plan.inputs, GraphOutputs(c_.info.flags, *job.entry, plan.outputs),
                                    job.stream, job.index);
  }
  Status s = RunSegments(job);
  return s.ok() ? Commit(job) : Abandon(job, std::move(s));
}

Status CapturePipeline::AllocateStaticBuffers(CaptureJob& job) {
  GraphEntry& e = *job.entry;
  const Args in = job.plan->graph_inputs, out = job.plan->graph_outputs;
  // Static buffers plus the method's peak eager scratch, so the capture
  // itself rarely has to allocate (the budget's estimate is the same sum).
  ENCORE_RETURN_IF_ERROR(c_.store.arena.BeginCapture(e.id, CaptureReserveBytes(c_.store, in, out, c_.info.flags.copy_outputs, c_.pad.on())));
  for (const auto& [refs, dst] : {std::pair{in, &e.static_inputs}, std::pair{out, &e.static_outputs}}) {
    for (const TensorRef& t : refs) {
      TensorRef s = t;
      // One byte more, so no static buffer ends where the next begins: the
      // scan can then tell an end pointer from a base.
      ENCORE_ASSIGN_OR_RETURN(s.data, c_.store.arena.AllocateCapture(t.span_bytes() + 1));
      dst->push_back(s);
    }
  }
  if (c_.info.flags.copy_outputs && !out.empty()) {
    ENCORE_ASSIGN_OR_RETURN(void* table, c_.store.arena.AllocateCapture(out.size() * sizeof(void*)));
    job.out_table = static_cast<void**>(table);
  }
  if (job.plan->padded()) {
    ENCORE_ASSIGN_OR_RETURN(void* words, c_.store.arena.AllocateCapture((out.size() + 1) * sizeof(uint64_t)));
    job.launch_slot = static_cast<uint64_t*>(words);
    job.out_bytes = job.launch_slot + 1;
  }
  return OkStatus();
}

StepResult CapturePipeline::Prepare(CaptureJob& job) {
  // An error other code left pending in CUDA's last-error slot is not ours:
  // taken for our staging launch's own, it would fail the capture and turn
  // graphs off for good. Consume it and say so.
  if (cudaError_t stale = cuda().GetLastError(); stale != cudaSuccess) {
    c_.info.log.Warn("stale_cuda_error", {{"method", c_.info.name},
                                     {"error", cudaGetErrorName(stale)},
                                     {"detail", "pending before the capture began; not caused by encore, cleared"}});
  }
  GraphEntry& e = *job.entry;
  e.id = ++c_.store.next_capture_id;
  e.signature = CallSignature::Of(job.plan->graph_inputs, job.plan->graph_outputs);
  e.pieces.resize(c_.info.body.pieces());
  if (Status s = AllocateStaticBuffers(job); !s.ok()) return Failed(CaptureStep::kBegin, s);
  if (Status s = c_.store.last_launch.Prepare(); !s.ok()) return Failed(CaptureStep::kBegin, s);
  // Host-pinned and device memory for checks and padded rows: made before
  // the capture, where allocating would invalidate it.
  if (Status s = c_.checks.PrepareForCapture(job.stream); !s.ok()) return Failed(CaptureStep::kBegin, s);
  if (job.plan->padded()) {
    if (Status s = c_.pad.rows().Prepare(c_.info.name); !s.ok()) return Failed(CaptureStep::kBegin, s);
  }
  if (StepResult f = PrepareControl(job)) return f;
  // The legacy default stream cannot be captured: capture on our own stream
  // and launch the graph on the caller's.
  job.capture = job.stream;
  if (IsLegacyDefault(job.stream)) {
    if (!c_.capture_stream) {
      StatusOr<Stream> st = Stream::Create();
      if (!st.ok()) return Failed(CaptureStep::kBegin, st.status());
      c_.capture_stream = *std::move(st);
    }
    job.capture = c_.capture_stream.get();
  }
  return std::nullopt;
}

StepResult CapturePipeline::PrepareControl(CaptureJob& job) {
  // Made only for a body that used Call::If or While (seen in its warmups),
  // or that nothing was seen of: streams and pinned memory cannot be made
  // inside the capture.
  if (!c_.control.uses_control && job.warmed_up) return std::nullopt;
  if (!QueryConditionalSupport().supported) return std::nullopt;  // If and While refuse, saying why
  if (Status s = c_.control.body_streams.Prepare(); !s.ok()) return Failed(CaptureStep::kBegin, s);
  if (c_.control.loops.device() == nullptr) {
    StatusOr<LoopRecord> r = LoopRecord::Create();
    if (!r.ok()) return Failed(CaptureStep::kBegin, r.status());
    c_.control.loops = *std::move(r);
  }
  job.control_ready = true;
  return std::nullopt;
}

Status CapturePipeline::RunSegments(CaptureJob& job) {
  for (const Segment& seg : c_.info.body.segments()) {
    if (seg.piece) {
      ENCORE_RETURN_IF_ERROR(CapturePiece(job, seg));
      continue;
    }
    // An eager stage sees the caller's tensors, after the pieces before it.
    ENCORE_RETURN_IF_ERROR(c_.runner.RunStages(seg.first, seg.last, job.plan->inputs, job.plan->outputs, job.stream,
                                               CallKind::kEager, job.index));
  }
  return OkStatus();
}

CaptureOutcome CapturePipeline::FailBeforeAnyPiece(CaptureJob& job, const StepFailure& f) {
  // Frees exactly what this capture allocated; nothing if its arena
  // capture never began. A background capture's preparation begins none,
  // and the worker may have its own open: that one is not this call's.
  if (!job.background) (void)c_.store.arena.AbortCapture();
  const Status named = NameMethod(c_.info.name, f.status);
  const CaptureFailure c = ClassifyCaptureFailure(f.step, named, f.cuda_capture_error, /*graph_launched=*/false);
  // The other ranks vote just before their first launch: this is a "no".
  (void)c_.votes.Vote(c.reason, "first launch");
  CaptureOutcome out = TurnOffAfter(job, c, /*background=*/false);
  out.ran_eagerly = true;
  out.eager_run_due = true;
  return out;
}

CaptureOutcome CapturePipeline::TurnOffAfter(const CaptureJob& job, const CaptureFailure& c, bool background) {
  if (background) {
    c_.info.log.Log(c.expected ? spdlog::level::info : spdlog::level::warn, "capture_failed",
                    {{"method", c_.info.name}, {"call", job.index}, {"stage", CaptureStepName(c.step)},
                     {"reason", c.status.message()}, {"expected", c.expected}, {"background", true}});
  } else {
    c_.info.log.Log(c.expected ? spdlog::level::info : spdlog::level::warn, "capture_failed",
                    {{"method", c_.info.name}, {"call", job.index}, {"stage", CaptureStepName(c.step)},
                     {"reason", c.status.message()}, {"expected", c.expected}});
  }
  ClearCudaError();  // this thread's (the worker's, for a background capture)
  CaptureOutcome out;
  out.kind = CaptureOutcome::Kind::kEager;
  out.counts = job.counts;
  ++out.counts.capture_failures;
  out.turn_off = true;
  out.graphs_off = "capture failed at " + c.reason;
  out.off_code = eager_reason::kCaptureFailed;
  return out;
}

CaptureOutcome CapturePipeline::Abandon(CaptureJob& job, Status status) {
  CaptureOutcome out;
  out.kind = CaptureOutcome::Kind::kAbandoned;
  out.status = std::move(status);
  out.counts = job.counts;
  if (job.graphed > 0) {
    // A piece's graph ran on the arena's memory: it stays allocated, and the
    // entry is forgotten (the next call captures again).
    c_.store.arena.CommitCapture();
    (void)c_.store.last_launch.Wait();
    c_.store.arena.DropGraph(job.entry->id);
    return out;
  }
  (void)c_.store.arena.AbortCapture();
  if (!job.failure.empty()) {
    out.turn_off = true;
    out.graphs_off = job.failure;
    out.off_code = job.failure_code;
    out.ran_eagerly = true;
  }
  return out;
}

void CapturePipeline::LogPhases(const CaptureJob& job, size_t nodes, double us) const {
  if (!c_.info.log.enabled(spdlog::level::debug)) return;
  const CapturePhases& ph = job.phases;
  c_.info.log.Debug("capture_phases", {{"method", c_.info.name}, {"call", job.index}, {"nodes", nodes}, {"us", us},
#define ENCORE_X_(name) {#name "_us", ph.name},
                                       ENCORE_CAPTURE_PHASES_(ENCORE_X_)
#undef ENCORE_X_
                                      });
}

void CapturePipeline::DumpGraphs(const GraphEntry& e) const {
  if (c_.info.graph_dump_dir.empty()) return;
  const bool several = e.pieces.size() > 1;
  for (size_t i = 0; i < e.pieces.size(); ++i) {
    if (!e.pieces[i].graphed) continue;
    DumpCapturedGraph(c_.info.log, c_.info.graph_dump_dir, c_.info.name, c_.info.device, e.id,
                      e.pieces[i].staged.graph()->get(), several ? static_cast<int>(i) : -1);
  }
}

CaptureOutcome CapturePipeline::Commit(CaptureJob& job) {
  GraphEntry& e = *job.entry;
  CaptureOutcome out;
  out.counts = job.counts;
  if (job.graphed == 0) {
    // Every piece failed, or the body's stages are all eager (they ran
    // eagerly): graphs off.
    (void)c_.store.arena.AbortCapture();
    out.kind = CaptureOutcome::Kind::kEager;
    out.turn_off = true;
    out.graphs_off = job.failure;
    out.off_code = job.failure_code;
    out.ran_eagerly = true;
    return out;
  }
  c_.store.arena.CommitCapture();
  e.launches = 1;
  if (c_.info.flags.binding != Binding::kStaged) {
    for (const PieceGraph& piece : e.pieces) {
      if (!piece.graphed) continue;
      c_.info.log.Info("binding", {{"method", c_.info.name}, {"call", job.index},
                                   {"binding", BindingName(piece.binding.binding)}, {"reason", piece.binding.reason}});
    }
  }
  out.kind = CaptureOutcome::Kind::kCaptured;
  CapturedGraph& graph = out.graph;
  graph.recapture = job.recapture;
  graph.updated_in_place = job.updated_in_place;
  for (const PieceGraph& piece : e.pieces) graph.nodes += piece.graphed ? piece.graph_nodes() : 0;
  graph.signature = e.signature.ToString();
  graph.us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - job.t0).count();
  LogPhases(job, graph.nodes, graph.us);
  DumpGraphs(e);
  GraphEntry* kept = job.entry.get();
  c_.store.cache.Insert(std::move(job.entry), c_.pad.GraphCap(c_.info.flags.max_graphs));
  if (job.verifying) {
    out.verify = PendingVerify{std::move(job.verify), GraphOutputs(c_.info.flags, *kept, job.plan->outputs)};
  }
  return out;
}

}  // namespace encore
