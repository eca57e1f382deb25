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
#include "encore/graph/capture/internal/graph_memory.h"
#include "encore/graph/instance/internal/launch.h"
#include "encore/graph/internal/messages.h"
#include "encore/graph/verify/internal/verification.h"

namespace encore {
namespace {

// Report's capture times: whole microseconds, at least 1 for a capture that
// happened.
int64_t CaptureMicros(double us) { return std::max<int64_t>(1, std::llround(us)); }

bool IsLegacyDefault(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

}  // namespace

Status CapturePipeline::Run(const CallPlan& plan, cudaStream_t stream, int64_t index, bool recapture) {
  NvtxScope range(p_.nvtx, NvtxRange::kCapture);
  CaptureJob job;
  job.plan = &plan;
  job.stream = stream;
  job.index = index;
  job.recapture = recapture;
  p_.graphs.SetPhase(MethodPhase::kCapture, index);
  if (StageResult f = Prepare(job)) return FailBeforeAnyPiece(job, *f);
  job.phases.prepare = Lap(&job.lap);
  // The snapshots are taken on this stream, after the last launch wherever
  // it ran. A join that fails here fails again at the launch, which answers.
  (void)p_.last_launch.Join(stream);
  Verification verification(p_);
  job.verifying = verification.Wanted(*job.entry, /*capture_launch=*/true);
  if (job.verifying) {
    job.verify = verification.Begin(*job.entry, plan.inputs, GraphOutputs(p_, *job.entry, plan.outputs), stream, index);
  }
  Status s = RunSegments(job);
  s = s.ok() ? Commit(job) : Abandon(job, std::move(s));
  if (!p_.graphs.on()) p_.verify_scratch = VerifyScratch();  // no launch to check any more
  return s;
}

Status CapturePipeline::AllocateStaticBuffers(CaptureJob& job) {
  GraphEntry& e = *job.entry;
  const Args in = job.plan->graph_inputs, out = job.plan->graph_outputs;
  // Static buffers plus the method's peak eager scratch, so the capture
  // itself rarely has to allocate (the budget's estimate is the same sum).
  ENCORE_RETURN_IF_ERROR(p_.arena.BeginCapture(e.id, CaptureReserveBytes(p_, in, out)));
  for (const auto& [refs, dst] : {std::pair{in, &e.static_inputs}, std::pair{out, &e.static_outputs}}) {
    for (const TensorRef& t : refs) {
      TensorRef s = t;
      // One byte more, so no static buffer ends where the next begins: the
      // scan can then tell an end pointer from a base.
      ENCORE_ASSIGN_OR_RETURN(s.data, p_.arena.AllocateCapture(t.span_bytes() + 1));
      dst->push_back(s);
    }
  }
  if (p_.flags.copy_outputs && !out.empty()) {
    ENCORE_ASSIGN_OR_RETURN(void* table, p_.arena.AllocateCapture(out.size() * sizeof(void*)));
    job.out_table = static_cast<void**>(table);
  }
  if (job.plan->padded()) {
    ENCORE_ASSIGN_OR_RETURN(void* words, p_.arena.AllocateCapture((out.size() + 1) * sizeof(uint64_t)));
    job.launch_slot = static_cast<uint64_t*>(words);
    job.out_bytes = job.launch_slot + 1;
  }
  return OkStatus();
}

StageResult CapturePipeline::Prepare(CaptureJob& job) {
  // An error other code left pending in CUDA's last-error slot is not ours:
  // taken for our staging launch's own, it would fail the capture and turn
  // graphs off for good. Consume it and say so.
  if (cudaError_t stale = cuda().GetLastError(); stale != cudaSuccess) {
    p_.log.Warn("stale_cuda_error", {{"method", p_.name},
                                     {"error", cudaGetErrorName(stale)},
                                     {"detail", "pending before the capture began; not caused by encore, cleared"}});
  }
  GraphEntry& e = *job.entry;
  e.id = ++p_.next_capture_id;
  e.signature = CallSignature::Of(job.plan->graph_inputs, job.plan->graph_outputs);
  e.pieces.resize(p_.body.pieces());
  if (Status s = AllocateStaticBuffers(job); !s.ok()) return Failed(CaptureStage::kBegin, s);
  if (Status s = p_.last_launch.Prepare(); !s.ok()) return Failed(CaptureStage::kBegin, s);
  // Host-pinned and device memory for checks and padded rows: made before
  // the capture, where allocating would invalidate it.
  if (Status s = p_.checks.PrepareForCapture(job.stream); !s.ok()) return Failed(CaptureStage::kBegin, s);
  if (job.plan->padded()) {
    if (Status s = p_.pad.rows().Prepare(p_.name); !s.ok()) return Failed(CaptureStage::kBegin, s);
  }
  if (StageResult f = PrepareControl(job)) return f;
  // The legacy default stream cannot be captured: capture on our own stream
  // and launch the graph on the caller's.
  job.capture = job.stream;
  if (IsLegacyDefault(job.stream)) {
    if (!p_.capture_stream) {
      StatusOr<Stream> st = Stream::Create();
      if (!st.ok()) return Failed(CaptureStage::kBegin, st.status());
      p_.capture_stream = *std::move(st);
    }
    job.capture = p_.capture_stream.get();
  }
  return std::nullopt;
}

StageResult CapturePipeline::PrepareControl(CaptureJob& job) {
  // Made only for a body that used Call::If or While (seen in its warmups),
  // or that nothing was seen of: streams and pinned memory cannot be made
  // inside the capture.
  if (!p_.uses_control && p_.warmups_done > 0) return std::nullopt;
  if (!QueryConditionalSupport().supported) return std::nullopt;  // If and While refuse, saying why
  if (Status s = p_.body_streams.Prepare(); !s.ok()) return Failed(CaptureStage::kBegin, s);
  if (p_.loops.device() == nullptr) {
    StatusOr<LoopRecord> r = LoopRecord::Create();
    if (!r.ok()) return Failed(CaptureStage::kBegin, r.status());
    p_.loops = *std::move(r);
  }
  job.control_ready = true;
  return std::nullopt;
}

Status CapturePipeline::RunSegments(CaptureJob& job) {
  for (const Segment& seg : p_.body.segments()) {
    if (seg.piece) {
      ENCORE_RETURN_IF_ERROR(CapturePiece(job, seg));
      continue;
    }
    // An eager stage sees the caller's tensors, after the pieces before it.
    ENCORE_RETURN_IF_ERROR(p_.runner.RunStages(seg.first, seg.last, job.plan->inputs, job.plan->outputs, job.stream,
                                               CallKind::kEager, job.index));
  }
  return OkStatus();
}

Status CapturePipeline::FailBeforeAnyPiece(CaptureJob& job, const StageFailure& f) {
  // Frees exactly what this capture allocated; nothing if its arena
  // capture never began.
  (void)p_.arena.AbortCapture();
  const Status named = NameMethod(p_.name, f.status);
  const CaptureFailure c = ClassifyCaptureFailure(f.stage, named, f.cuda_capture_error, /*graph_launched=*/false);
  // The other ranks vote just before their first launch: this is a "no".
  (void)p_.votes.Vote(c.reason, "first launch");
  ++p_.counters.capture_failures;
  p_.log.Log(c.expected ? spdlog::level::info : spdlog::level::warn, "capture_failed",
             {{"method", p_.name}, {"call", job.index}, {"stage", CaptureStageName(c.stage)},
              {"reason", c.status.message()}, {"expected", c.expected}});
  p_.graphs.TurnOff(eager_reason::kCaptureFailed, "capture failed at " + c.reason, job.index);
  ClearCudaError();
  if (!job.plan->precapture) p_.CountEager(eager_reason::kCaptureFailed);
  Status s = p_.runner.RunAll(job.plan->inputs, job.plan->outputs, job.stream, CallKind::kEager, job.index);
  if (!s.ok()) p_.log.Error("eager_failed", {{"method", p_.name}, {"call", job.index}, {"error", s.ToString()}});
  return s;
}

Status CapturePipeline::Abandon(CaptureJob& job, Status status) {
  if (job.graphed > 0) {
    // A piece's graph ran on the arena's memory: it stays allocated, and the
    // entry is forgotten (the next call captures again).
    p_.arena.CommitCapture();
    (void)p_.last_launch.Wait();
    p_.arena.DropGraph(job.entry->id);
  } else {
    (void)p_.arena.AbortCapture();
    if (!job.failure.empty()) {
      p_.graphs.TurnOff(job.failure_code, job.failure, job.index);
      if (!job.plan->precapture) p_.CountEager(job.failure_code);
    }
  }
  return status;
}

void CapturePipeline::LogCaptured(const CaptureJob& job, const GraphEntry& e) const {
  size_t nodes = 0;
  for (const PieceGraph& piece : e.pieces) nodes += piece.graphed ? piece.graph_nodes() : 0;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - job.t0).count();
  if (p_.log.enabled(spdlog::level::debug)) {
    const CapturePhases& ph = job.phases;
    p_.log.Debug("capture_phases", {{"method", p_.name}, {"call", job.index}, {"nodes", nodes}, {"us", us},
#define ENCORE_X_(name) {#name "_us", ph.name},
                                    ENCORE_CAPTURE_PHASES_(ENCORE_X_)
#undef ENCORE_X_
                                   });
  }
  if (!job.recapture) {
    p_.log.Info("captured", {{"method", p_.name}, {"call", job.index}, {"nodes", nodes},
                             {"signature", e.signature.ToString()}, {"updated_in_place", job.updated_in_place},
                             {"us", us}});
    return;
  }
  // A server whose shapes keep changing recaptures on most calls: the first
  // line, then one a second with the count of those not logged.
  const RateLimiter::Decision d = p_.recapture_log_limit.Admit(RateLimiter::Clock::now());
  if (!d.log) return;
  p_.log.Info("recaptured", {{"method", p_.name}, {"call", job.index}, {"nodes", nodes},
                             {"signature", e.signature.ToString()}, {"updated_in_place", job.updated_in_place},
                             {"us", us}, {"suppressed", d.suppressed}});
}

Status CapturePipeline::Commit(CaptureJob& job) {
  GraphEntry& e = *job.entry;
  if (job.graphed == 0) {
    // Every piece failed (its stages ran eagerly): graphs off.
    (void)p_.arena.AbortCapture();
    p_.graphs.TurnOff(job.failure_code, job.failure, job.index);
    if (!job.plan->precapture) p_.CountEager(job.failure_code);
    return OkStatus();
  }
  p_.arena.CommitCapture();
  e.launches = 1;
  ++(job.recapture ? p_.counters.recaptures : p_.counters.captures);
  if (p_.flags.binding != Binding::kStaged) {
    for (const PieceGraph& piece : e.pieces) {
      if (!piece.graphed) continue;
      p_.log.Info("binding", {{"method", p_.name}, {"call", job.index}, {"binding", BindingName(piece.binding.binding)},
                              {"reason", piece.binding.reason}});
    }
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - job.t0).count();
  p_.counters.last_capture_us = CaptureMicros(us);
  p_.counters.capture_us += p_.counters.last_capture_us;
  LogCaptured(job, e);
  if (!p_.graph_dump_dir.empty()) {
    const bool several = e.pieces.size() > 1;
    for (size_t i = 0; i < e.pieces.size(); ++i) {
      if (!e.pieces[i].graphed) continue;
      DumpCapturedGraph(p_.log, p_.graph_dump_dir, p_.name, p_.device, e.id, e.pieces[i].staged.graph()->get(),
                        several ? static_cast<int>(i) : -1);
    }
  }
  GraphEntry* kept = job.entry.get();
  p_.cache.Insert(std::move(job.entry), p_.pad.GraphCap(p_.flags.max_graphs));
  p_.graphs.SetPhase(MethodPhase::kReplay, job.index);
  if (!job.verifying) return OkStatus();
  return Verification(p_).Finish(job.verify ? &*job.verify : nullptr, GraphOutputs(p_, *kept, job.plan->outputs),
                                 job.stream, job.index);
}

}  // namespace encore
