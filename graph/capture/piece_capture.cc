// SPDX-License-Identifier: Apache-2.0
// One piece of a capture call: record, finalize, first launch.
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/device_state.h"
#include "encore/core/internal/scoped_thread_capture.h"
#include "encore/graph/capture/internal/binding_choice.h"
#include "encore/graph/capture/internal/probe.h"
#include "encore/graph/capture/internal/capture_pipeline.h"
#include "encore/graph/capture/internal/outside_work.h"
#include "encore/graph/internal/stream_capture.h"
#include "encore/graph/control/internal/conditional_capture.h"
#include "encore/graph/store/internal/launch.h"
#include "encore/graph/internal/messages.h"

namespace encore {
namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

}  // namespace

StagingPlan CapturePipeline::StagingPlanFor(const CaptureJob& job, const Segment& segment) const {
  const GraphEntry& e = *job.entry;
  StagingPlan plan;
  plan.inputs = job.plan->inputs;
  plan.outputs = job.plan->outputs;
  plan.static_inputs = e.static_inputs;
  plan.static_outputs = e.static_outputs;
  // After an eager stage (or a piece), the outputs may carry data.
  plan.outputs_in = segment.first > 0 && c_.info.flags.copy_outputs;
  plan.copy_out = c_.info.flags.copy_outputs;
  plan.out_table = job.out_table;
  plan.sequence = c_.checks.sequence();
  if (job.plan->padded()) {
    plan.pad.rows = c_.pad.rows().device();
    plan.pad.launch_slot = job.launch_slot;
    plan.pad.out_bytes = job.out_bytes;
    plan.pad.graph_inputs = job.plan->graph_inputs;
    plan.pad.graph_outputs = job.plan->graph_outputs;
  }
  return plan;
}

Status CapturePipeline::CapturePiece(CaptureJob& job, const Segment& segment) {
  PieceJob pj;
  pj.segment = &segment;
  pj.piece = &job.entry->pieces[segment.index];
  job.lap = std::chrono::steady_clock::now();  // eager stages before this piece are not the capture's
  StepResult failed = Record(job, pj);
  job.phases.record += Lap(&job.lap);
  if (!failed) failed = Finalize(job, pj);
  job.phases.instantiate += Lap(&job.lap);
  if (failed) return FailPiece(job, pj, *failed);
  return FirstLaunch(job, pj);
}

StepResult CapturePipeline::Record(CaptureJob& job, PieceJob& pj) {
  // Tells the readback shims this thread is capturing, so a read on a stream
  // other than the captured one refuses instead of breaking the capture.
  ScopedThreadCapture thread_capture;
  NvtxScope range(c_.info.nvtx, NvtxRange::kCaptureRecord);
  GraphEntry& e = *job.entry;
  // Poisoned, so an output written by work outside the capture shows. Not
  // in the background: that would run device work beside the replays of
  // the method's other graphs, whose buffers share this memory.
  if (!job.background) {
    if (Status s = PoisonOutputs(e.static_outputs, job.capture); !s.ok()) return Failed(CaptureStep::kBegin, s);
  }
  if (job.control_ready) {
    // The loops' counters live as long as the graph (device memory: made
    // before the capture).
    StatusOr<LoopCounters> counters = LoopCounters::Create();
    if (!counters.ok()) return Failed(CaptureStep::kBegin, counters.status());
    pj.piece->loop_counters = std::make_unique<LoopCounters>(*std::move(counters));
  }
  StatusOr<StreamCapture> cap = StreamCapture::Begin(job.capture);
  if (!cap.ok()) return Failed(CaptureStep::kBegin, cap.status());
  const StagingPlan plan = StagingPlanFor(job, *pj.segment);
  Status failure = pj.piece->staged.AddHeads(plan, *cap, job.capture);
  if (failure.ok()) failure = RecordBody(job, pj);
  if (failure.ok() && c_.info.flags.binding != Binding::kStaged) {
    // Where the direct form's completion record will attach.
    StatusOr<std::vector<cudaGraphNode_t>> f = cap->Frontier();
    if (f.ok()) pj.nodes.body_frontier = *std::move(f);
    if (!f.ok()) failure = f.status();
  }
  if (failure.ok()) failure = pj.piece->staged.AddTails(plan, *cap, job.capture, &pj.nodes.tails);
  return EndRecord(job, pj, *cap, std::move(failure));
}

Status CapturePipeline::RecordBody(CaptureJob& job, PieceJob& pj) {
  const GraphEntry& e = *job.entry;
  // Device state the body's shims advance per launch, which a second run of
  // the call rewinds first.
  ScopedDeviceStateRecorder states(&pj.piece->device_states);
  pj.checks_before = c_.checks.graph_checks();
  std::optional<ConditionalCapture> control;
  if (job.control_ready) {
    control.emplace(ControlResources{&c_.control.body_streams, pj.piece->loop_counters.get(), c_.control.loops.device(),
                                     c_.checks.sequence()});
    c_.control.recording = &*control;
  }
  Status s = c_.runner.RunCaptured(pj.segment->first, pj.segment->last, e.static_inputs, e.static_outputs,
                                   job.capture, job.index, &pj.kept);
  c_.control.recording = nullptr;
  if (control) {
    pj.piece->conditional = control->conditionals() > 0;
    pj.bodies = control->bodies();
    pj.body_capture_broken = control->body_capture_broken();
  }
  return s;
}

StepResult CapturePipeline::EndRecord(CaptureJob& job, PieceJob& pj, StreamCapture& cap, Status failure) {
  (void)job;
  // The graph's last work, which the completion record node will follow.
  std::vector<cudaGraphNode_t> frontier;
  if (failure.ok()) {
    StatusOr<std::vector<cudaGraphNode_t>> f = cap.Frontier();
    if (f.ok()) frontier = *std::move(f);
    if (!f.ok()) failure = f.status();
  }
  if (pj.body_capture_broken) {
    cap.EndAndGiveUp();
    return Failed(CaptureStep::kMethod,
                  failure.ok() ? FailedPreconditionError("an If/While body's own capture was broken") : failure, true);
  }
  bool capture_error = false;
  StatusOr<Graph> g = cap.End(&capture_error);
  // A CUDA call the capture cannot record usually also invalidates it;
  // ending the capture said whether CUDA saw it that way.
  if (!failure.ok()) return Failed(CaptureStep::kMethod, failure, capture_error);
  if (!g.ok()) return Failed(CaptureStep::kEndCapture, g.status(), capture_error);
  // The last piece's launch records the last-launch event as its last node,
  // so Release and a launch on another stream can wait for it without an
  // API call per replay.
  cudaGraphNode_t record = nullptr;
  const cudaError_t added = !c_.info.PieceRecords(pj.segment->index) ? cudaSuccess
                                               : cuda().GraphAddEventRecordNode(&record, g->get(), frontier.data(),
                                                                                frontier.size(), c_.store.last_launch.event());
  if (Status s = CudaResult(added, CudaCall::kGraphAddEventRecordNode); !s.ok()) {
    return Failed(CaptureStep::kEndCapture, s);
  }
  pj.nodes.heads = pj.piece->staged.head_nodes();
  pj.nodes.record = record;
  pj.piece->records = record != nullptr;
  pj.graph = *std::move(g);
  return std::nullopt;
}

StepResult CapturePipeline::CheckUnreferenced(CaptureJob& job, PieceJob& pj, const std::vector<bool>& referenced,
                                               bool complete) {
  GraphEntry& e = *job.entry;
  if (!complete) return std::nullopt;  // the scan could not read every node: no conclusion
  if (!job.background) {  // the check reads the poison back: device work and a sync
    StatusOr<std::string> outside = WorkOutsideCapture(e.static_outputs, referenced, job.capture);
    if (!outside.ok()) return Failed(CaptureStep::kMethod, outside.status());
    if (!outside->empty()) return Failed(CaptureStep::kMethod, FailedPreconditionError(*outside));
  }
  if (!c_.info.flags.copy_outputs) return std::nullopt;
  std::vector<int> untouched;
  for (size_t i = 0; i < e.static_outputs.size(); ++i) {
    const size_t t = e.static_inputs.size() + i;
    if (!referenced[t] && e.static_outputs[i].span_bytes() > 0) untouched.push_back(static_cast<int>(t));
  }
  if (untouched.empty()) return std::nullopt;
  StatusOr<bool> added = pj.piece->staged.AddRoundTrips(untouched, StagingPlanFor(job, *pj.segment));
  if (!added.ok()) return Failed(CaptureStep::kEndCapture, added.status());
  if (!*added) {
    c_.info.log.Warn("output_not_round_tripped",
                {{"method", c_.info.name}, {"outputs", untouched.size()},
                 {"detail", "no node refers to these outputs and the staging heads have no room to copy them in: "
                            "a replay copies the graph's buffer out whether or not the body wrote it"}});
  }
  return std::nullopt;
}

StepResult CapturePipeline::Finalize(CaptureJob& job, PieceJob& pj) {
  PieceGraph& piece = *pj.piece;
  GraphEntry& e = *job.entry;
  // Nodes inside conditional bodies count too.
  if (StatusOr<size_t> n = CountNodesRecursive(pj.graph->get(), &pj.bodies); n.ok()) piece.nodes = *n;
  if (Status s = piece.staged.ReadLaunches(); !s.ok()) return Failed(CaptureStep::kEndCapture, s);
  piece.staged.SetGraph(std::make_shared<Graph>(*std::move(pj.graph)));
  const std::vector<cudaGraphNode_t> ours = pj.nodes.all();
  ScanResult scan = ReferenceScan::Run(piece.staged.graph()->get(), e.static_inputs, e.static_outputs, ours, &pj.bodies);
  pj.memory_nodes = scan.has_memory_nodes;
  if (StepResult f = CheckUnreferenced(job, pj, scan.referenced, scan.complete)) return f;
  const bool body_checks = c_.checks.graph_checks() > pj.checks_before;
  if (body_checks && c_.checks.sequence() != nullptr && !piece.staged.heads().empty()) {
    pj.nodes.check_sequence = c_.checks.sequence();
    pj.nodes.head_launch = piece.staged.heads().front().launch;
  }
  pj.direct = ChoosePieceBinding(c_, piece, BindingInput{std::move(scan), pj.nodes, job.plan->padded(), body_checks,
                                                         e.static_inputs, e.static_outputs, job.recaptures});
  if (job.background && pj.direct) {
    pj.direct.reset();  // the probe that proves a direct form runs the graph
    piece.binding = BackgroundBinding(c_.info.flags.binding);
  }
  job.phases.scan += Lap(&job.lap);
  return Instantiate(job, pj);
}

StepResult CapturePipeline::Instantiate(CaptureJob& job, PieceJob& pj) {
  PieceGraph& piece = *pj.piece;
  // A graph with conditional nodes may have one executable at a time, and
  // CUDA does not update one in place; one with memory nodes may have one
  // executable at a time too (a second instantiation is refused).
  piece.staged.set_max_variants(piece.conditional || pj.memory_nodes ? 1 : MaxExecVariants(piece.nodes));
  // Under kRecapture with the cache full, the least recently used graph's
  // executable updated in place when CUDA accepts it: cheaper than a new
  // instantiation.
  if (job.recapture && !job.background && !piece.conditional &&
      static_cast<int>(c_.store.cache.size()) >= c_.pad.GraphCap(c_.info.flags.max_graphs)) {
    NvtxScope range(c_.info.nvtx, NvtxRange::kCaptureUpdate);
    if (c_.store.cache.AdoptLruExecutable(*job.entry)) {
      job.updated_in_place = true;
      ++job.counts.updates_in_place;
      return std::nullopt;
    }
  }
  if (pj.direct && !piece.conditional && BuildDirectFirst(job, pj)) return std::nullopt;
  NvtxScope range(c_.info.nvtx, NvtxRange::kCaptureInstantiate);
  StatusOr<GraphExec> exec = GraphExec::Instantiate(*piece.staged.graph());
  if (!exec.ok()) return Failed(CaptureStep::kInstantiate, exec.status());
  ++job.counts.instantiations;
  piece.staged.variants().Add(*std::move(exec), piece.staged.CapturedAddresses());
  return std::nullopt;
}

bool CapturePipeline::BuildDirectFirst(CaptureJob& job, PieceJob& pj) {
  // Under direct binding the staged graph's executable answers only calls
  // the direct form declines and a piece the probe stages, so it is made
  // when one of them needs it. The first launch runs the direct form's
  // first executable (the body's nodes on the static buffers) between the
  // staged heads and tails launched as kernels, which is the staged graph's
  // work: one instantiation, not two.
  job.phases.instantiate += Lap(&job.lap);
  PieceGraph& piece = *pj.piece;
  job.phases.direct_instantiate += BuildDirect(c_, piece, *std::move(pj.direct), job.index, job.counts);
  pj.direct.reset();
  if (piece.direct) job.phases.direct_clone += piece.direct->clone_us();
  job.phases.build_direct += Lap(&job.lap);
  pj.direct_first = piece.direct != nullptr;
  return pj.direct_first;
}

StepResult CapturePipeline::Launch(CaptureJob& job, PieceJob& pj) {
  PieceGraph& piece = *pj.piece;
  const CallPlan& plan = *job.plan;
  Status s = plan.padded() ? SetPadRows(c_.launcher(), plan.batch) : OkStatus();
  NvtxScope range(c_.info.nvtx, NvtxRange::kCaptureFirstLaunch);
  if (s.ok() && !pj.direct_first) s = LaunchGraph(c_.launcher(), piece.staged.variants().at(0).exec, job.stream, job.index, true, piece.records);
  if (!pj.direct_first || !s.ok()) return s.ok() ? std::nullopt : Failed(CaptureStep::kFirstLaunch, s);
  bool body_launched = false;
  s = LaunchAroundDirect(c_.launcher(), piece, job.stream, job.index, &body_launched);
  if (s.ok()) return std::nullopt;
  StepFailure f{CaptureStep::kFirstLaunch, s};
  f.graph_launched = body_launched;
  return f;
}

Status CapturePipeline::FailFirstLaunch(CaptureJob& job, PieceJob& pj, const StepFailure& f) {
  // A launch that returned an error ran nothing of the body, so the eager
  // retry cannot apply the call twice; a tail that failed after the body
  // ran returns its error instead, once the body's work is done with the
  // buffers and owners that go with the piece.
  if (f.graph_launched) (void)cuda().StreamSynchronize(job.stream);
  Status eager = FailPiece(job, pj, f);
  // The other ranks launched, and vote on the probe once that launch is
  // done: after this rank's eager retry ran the same collectives, its no
  // keeps them from running the probe's.
  if (c_.votes.several_ranks() && c_.info.flags.binding != Binding::kStaged) {
    (void)c_.votes.Vote("this rank's first launch failed", "binding probe");
  }
  return eager;
}

Status CapturePipeline::EnsureStagedExecutable(CaptureJob& job, PieceJob& pj) {
  PieceGraph& piece = *pj.piece;
  if (!pj.direct_first || piece.direct) return OkStatus();
  NvtxScope range(c_.info.nvtx, NvtxRange::kCaptureInstantiate);
  Status s = InstantiateStaged(piece, job.counts);
  if (s.ok()) return OkStatus();
  // The call's result stands; the buffers it ran on go once it is done.
  (void)cuda().StreamSynchronize(job.stream);
  StepFailure f{CaptureStep::kInstantiate, s};
  f.graph_launched = true;
  (void)FailPiece(job, pj, f);
  return s;
}

Status CapturePipeline::FirstLaunch(CaptureJob& job, PieceJob& pj) {
  PieceGraph& piece = *pj.piece;
  if (std::string veto = c_.votes.Vote({}, "first launch"); !veto.empty()) {
    job.failure_code = eager_reason::kRanks;
    return FailPiece(job, pj, StepFailure{CaptureStep::kFirstLaunch, FailedPreconditionError(veto)});
  }
  const CallPlan& plan = *job.plan;
  if (job.verify) {
    // The shims this piece draws from, as they are before its launch.
    if (Status s = job.verify->AddRegions(piece.device_states, job.stream); !s.ok()) {
      c_.info.log.Warn("verify_skipped", {{"method", c_.info.name}, {"call", job.index}, {"reason", s.message()}});
      job.verify.reset();
    }
  }
  const bool bumps = piece.direct ? piece.direct->bumps_sequence()
                                  : pj.direct && pj.direct->nodes.check_sequence != nullptr;
  Probe probe(c_, piece, *job.entry, StagingPlanFor(job, *pj.segment).outputs_in, bumps);
  (void)c_.store.last_launch.Join(job.stream);
  probe.Begin(plan.inputs, plan.outputs, job.stream, job.index);
  job.phases.probe_begin += Lap(&job.lap);
  if (pj.direct_first && !piece.direct) {
    // The probe could not start, so the piece is staged: its executable
    // now, before anything of it ran (a failure retries eagerly).
    pj.direct_first = false;
    if (Status s = InstantiateStaged(piece, job.counts); !s.ok()) {
      return FailFirstLaunch(job, pj, StepFailure{CaptureStep::kFirstLaunch, s});
    }
  }
  if (StepResult f = Launch(job, pj)) return FailFirstLaunch(job, pj, *f);
  // While the first launch runs: the probe's first check, queued, and the
  // direct form built on the host (after a recapture's update in place).
  job.phases.first_launch += Lap(&job.lap);
  probe.QueueFirstCheck(job.stream, job.index);
  if (pj.direct) {
    job.phases.direct_instantiate += BuildDirect(c_, piece, *std::move(pj.direct), job.index, job.counts);
    if (piece.direct) job.phases.direct_clone += piece.direct->clone_us();
  }
  job.phases.build_direct += Lap(&job.lap);
  probe.Bind(job.stream);
  // A first executable the bind replaced rather than rewrote (its memcpy
  // or memset nodes: Note [Memcpy nodes keep their memory's owner]).
  if (piece.direct) job.counts.instantiations += piece.direct->TakeReinstantiations();
  job.phases.probe_bind += Lap(&job.lap);
  // On every rank, probing or not: Finish casts the probe's vote.
  probe.Finish(plan.outputs, job.stream, job.index);
  job.phases.probe_finish += Lap(&job.lap);
  job.phases.probe_wait += probe.times().wait;
  job.phases.probe_bind += probe.times().bind;
  job.phases.probe_run += probe.times().run;
  job.phases.probe_keep += probe.times().keep;
  if (Status s = EnsureStagedExecutable(job, pj); !s.ok()) return OkStatus();  // eager from the next call
  piece.graphed = true;
  piece.kept = std::move(pj.kept);
  ++job.graphed;
  return OkStatus();
}

Status CapturePipeline::FailPiece(CaptureJob& job, PieceJob& pj, const StepFailure& f) {
  PieceGraph& piece = *pj.piece;
  const Status named = NameMethod(c_.info.name, f.status);
  const CaptureFailure c = ClassifyCaptureFailure(f.step, named, f.cuda_capture_error, f.graph_launched);
  // Every failure before the first launch is this rank's "no" in the vote
  // the other ranks cast just before their first launch.
  const bool vetoed = job.failure_code == eager_reason::kRanks && f.step == CaptureStep::kFirstLaunch;
  if (f.step != CaptureStep::kFirstLaunch && !f.graph_launched) (void)c_.votes.Vote(c.reason, "first launch");
  ++job.counts.capture_failures;
  const std::vector<std::string> stages = c_.info.body.StageNames(*pj.segment);
  c_.info.log.Log(c.expected || vetoed ? spdlog::level::info : spdlog::level::warn, "capture_failed",
             {{"method", c_.info.name}, {"call", job.index}, {"stage", vetoed ? "vote" : CaptureStepName(c.step)},
              {"reason", c.status.message()}, {"expected", c.expected || vetoed}, {"stages", Joined(stages)}});
  const std::string reason = vetoed ? std::string(f.status.message()) : "capture failed at " + c.reason;
  piece = PieceGraph();
  piece.eager_reason = reason;
  if (job.failure.empty()) job.failure = reason;
  if (!c.retry_eagerly) return c.status;
  // An error the failed capture left in CUDA's last-error slot (a real out
  // of memory, an invalidated capture) is encore's, not the body's.
  ClearCudaError();
  Status s = c_.runner.RunStages(pj.segment->first, pj.segment->last, job.plan->inputs, job.plan->outputs, job.stream,
                                 CallKind::kEager, job.index);
  if (!s.ok()) c_.info.log.Error("eager_failed", {{"method", c_.info.name}, {"call", job.index}, {"error", s.ToString()}});
  return s;
}

}  // namespace encore
