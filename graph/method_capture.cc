// SPDX-License-Identifier: Apache-2.0
// The capture pipeline of MethodInstance: prepare (memory, events, streams;
// nothing captured yet), record (the stream capture: head staging nodes, the
// method's body, tail staging nodes, the completion record), finalize (an
// executable: instantiated, or an old one updated in place) and commit (the
// vote, the first launch, the graph kept). A stage that fails returns what
// went wrong and FailCapture cleans up and runs the call eagerly. Nothing
// here throws once a capture has begun (the body's exceptions become Status).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/device_state.h"
#include "encore/core/scoped_thread_capture.h"
#include "encore/graph/stream_capture.h"
#include "graph/capture_job.h"  // private to graph/
#include "graph/graph_dump.h"  // private to graph/
#include "graph/messages.h"    // private to graph/
#include "graph/method_instance.h"  // private to graph/

namespace encore {

namespace {

MethodInstance::StageResult Failed(CaptureStage stage, Status s, bool cuda_capture_error = false) {
  return MethodInstance::StageFailure{stage, std::move(s), cuda_capture_error};
}

std::string Quoted(std::string_view name) { return "method '" + std::string(name) + "'"; }

// Report's capture times: whole microseconds, at least 1 for a capture that
// happened.
int64_t CaptureMicros(double us) { return std::max<int64_t>(1, std::llround(us)); }

bool IsLegacyDefault(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

}  // namespace

Status MethodInstance::CaptureAndLaunch(Args inputs, Args outputs, cudaStream_t stream, int64_t index,
                                        bool recapture, const PaddedArgs* padded) {
  NvtxScope range(nvtx_, NvtxRange::kCapture);
  CaptureJob job;
  job.graph_inputs = padded ? padded->inputs : inputs;
  job.graph_outputs = padded ? padded->outputs : outputs;
  job.padded = padded != nullptr;
  SetPhase(MethodPhase::kCapture, index);
  StageResult failed = PrepareCapture(job, inputs, outputs, stream);
  if (!failed) failed = RecordCapture(job, inputs, outputs, index);
  if (!failed) failed = FinalizeCapture(job, recapture);
  if (failed) return FailCapture(*failed, inputs, outputs, stream, index);
  return CommitCapture(job, inputs, outputs, stream, index, recapture);
}

Status MethodInstance::AllocateStaticBuffers(CaptureJob& job, Args inputs, Args outputs) {
  GraphEntry& e = *job.entry;
  // Static buffers plus the method's peak eager scratch, so the capture
  // itself rarely has to allocate (CaptureReserveBytes: the budget's
  // estimate uses the same sum).
  ENCORE_RETURN_IF_ERROR(arena_.BeginCapture(e.id, CaptureReserveBytes(inputs, outputs)));
  for (const auto& [refs, out] : {std::pair{inputs, &e.static_inputs}, std::pair{outputs, &e.static_outputs}}) {
    for (const TensorRef& t : refs) {
      TensorRef s = t;
      // One byte more, so no static buffer ends where the next begins: a
      // direct graph's scan can then tell an end pointer from a base.
      ENCORE_ASSIGN_OR_RETURN(s.data, arena_.AllocateCapture(t.span_bytes() + 1));
      out->push_back(s);
    }
  }
  if (flags_.copy_outputs && !outputs.empty()) {
    ENCORE_ASSIGN_OR_RETURN(void* table, arena_.AllocateCapture(outputs.size() * sizeof(void*)));
    job.out_table = static_cast<void**>(table);
  }
  if (job.padded) {
    ENCORE_ASSIGN_OR_RETURN(void* words, arena_.AllocateCapture((outputs.size() + 1) * sizeof(uint64_t)));
    job.launch_slot = static_cast<uint64_t*>(words);
    job.out_bytes = job.launch_slot + 1;
  }
  return OkStatus();
}

MethodInstance::StageResult MethodInstance::PrepareCapture(CaptureJob& job, Args inputs, Args outputs,
                                                           cudaStream_t stream) {
  // An error other code left pending in CUDA's last-error slot is not ours:
  // taken for our staging launch's own, it would fail the capture and turn
  // graphs off for good. Consume it and say so.
  if (cudaError_t stale = cuda().GetLastError(); stale != cudaSuccess) {
    log_.Warn("stale_cuda_error", {{"method", name_},
                                   {"error", cudaGetErrorName(stale)},
                                   {"detail", "pending before the capture began; not caused by encore, cleared"}});
  }
  job.entry->id = ++next_capture_id_;
  job.entry->signature = CallSignature::Of(job.graph_inputs, job.graph_outputs);
  if (Status s = AllocateStaticBuffers(job, job.graph_inputs, job.graph_outputs); !s.ok()) {
    return Failed(CaptureStage::kBegin, s);
  }
  if (!last_launch_event_) {
    StatusOr<Event> e = Event::Create();
    if (!e.ok()) return Failed(CaptureStage::kBegin, e.status());
    last_launch_event_ = *std::move(e);
  }
  // Host-pinned and device memory for checks: made before the capture,
  // where allocating it would invalidate the capture.
  if (Status s = checks_.PrepareForCapture(stream); !s.ok()) return Failed(CaptureStage::kBegin, s);
  // The legacy default stream cannot be captured: capture on our own stream
  // and launch the graph on the caller's.
  job.stream = stream;
  if (IsLegacyDefault(stream)) {
    if (!capture_stream_) {
      StatusOr<Stream> st = Stream::Create();
      if (!st.ok()) return Failed(CaptureStage::kBegin, st.status());
      capture_stream_ = *std::move(st);
    }
    job.stream = capture_stream_.get();
  }
  return std::nullopt;
}

MethodInstance::StageResult MethodInstance::RecordCapture(CaptureJob& job, Args inputs, Args outputs,
                                                          int64_t index) {
  // Tells the readback shims this thread is capturing, so a read on a stream
  // other than the captured one refuses instead of breaking the capture.
  ScopedThreadCapture thread_capture;
  NvtxScope range(nvtx_, NvtxRange::kCaptureRecord);
  StatusOr<StreamCapture> cap = StreamCapture::Begin(job.stream);
  if (!cap.ok()) return Failed(CaptureStage::kBegin, cap.status());
  // Head nodes stage the inputs and publish the output addresses; the method
  // runs; tail nodes copy the outputs out.
  Status failure = AddHeadNodes(job, *cap, inputs, outputs);
  if (failure.ok()) {
    Call call(this, job.stream, job.entry->static_inputs, job.entry->static_outputs, CallKind::kCapture, index);
    // Device state the body's shims advance per launch, which verification
    // rewinds before an eager re-run.
    ScopedDeviceStateRecorder states(&job.entry->device_states);
    job.checks_before = checks_.graph_checks();
    failure = InvokeFn(call);
  }
  if (failure.ok() && flags_.binding != Binding::kStaged) {
    // Where the direct form's completion record will attach.
    StatusOr<std::vector<cudaGraphNode_t>> f = cap->Frontier();
    if (f.ok()) job.staged.body_frontier = *std::move(f);
    if (!f.ok()) failure = f.status();
  }
  if (failure.ok()) failure = AddTailNodes(job, *cap, flags_.copy_outputs ? outputs.size() : 0);
  return EndCapture(job, *cap, std::move(failure));
}

Status MethodInstance::AddHeadNodes(CaptureJob& job, StreamCapture& cap, Args inputs, Args outputs) {
  // Always at least one head: chunk 0 also bumps the device-check sequence.
  constexpr size_t kChunk = StageParams::kMaxCopies;
  GraphEntry& e = *job.entry;
  const size_t n_in = inputs.size();
  const size_t n_out = flags_.copy_outputs ? outputs.size() : 0;
  const size_t chunks = std::max<size_t>({1, (n_in + kChunk - 1) / kChunk, (n_out + kChunk - 1) / kChunk});
  for (size_t c = 0; c < chunks; ++c) {
    HeadNode h;
    h.first = c * kChunk;
    StageParams& p = h.params;
    p.count = static_cast<int>(std::min(kChunk, n_in - std::min(n_in, h.first)));
    p.publish_count = static_cast<int>(std::min(kChunk, n_out - std::min(n_out, h.first)));
    p.table = job.out_table;
    p.table_base = static_cast<int>(h.first);
    p.sequence = c == 0 ? checks_.sequence() : nullptr;
    uint64_t max_bytes = 0;
    for (int k = 0; k < p.count; ++k) {
      const TensorRef& st = e.static_inputs[h.first + k];
      p.copies[k] = StageCopy{inputs[h.first + k].data, st.data, st.span_bytes()};
      max_bytes = std::max<uint64_t>(max_bytes, p.copies[k].bytes);
    }
    for (int k = 0; k < p.publish_count; ++k) p.publish[k] = outputs[h.first + k].data;
    // Padded: each launch's b comes from the rows ring (graph/pad_rows.h).
    if (job.padded) {
      SetPadRowsHead(p, pad_rows_.device(), job.launch_slot, job.out_bytes, job.graph_inputs, job.graph_outputs,
                     h.first);
    }
    cudaError_t err = LaunchStage(p, max_bytes, job.stream);
    if (err != cudaSuccess) return CudaStatus(err, "staging kernel launch", Quoted(name_));
    StatusOr<cudaGraphNode_t> node = cap.LastNode();
    if (!node.ok()) return NameMethod(name_, node.status());
    h.node = *node;
    e.template_heads.push_back(h);
    job.staged.heads.push_back(h.node);
  }
  return OkStatus();
}

Status MethodInstance::AddTailNodes(CaptureJob& job, StreamCapture& cap, size_t n_out) {
  constexpr size_t kChunk = StageParams::kMaxCopies;
  // A padded graph always ends with a tail: its last one counts the launch.
  const size_t chunks = std::max<size_t>((n_out + kChunk - 1) / kChunk, job.padded ? 1 : 0);
  for (size_t c = 0; c < chunks; ++c) {
    const size_t first = c * kChunk;
    StageParams p{};
    p.count = static_cast<int>(std::min(kChunk, n_out - std::min(n_out, first)));
    p.table = job.out_table;
    p.table_base = static_cast<int>(first);
    p.is_tail = 1;
    if (job.padded) {
      p.rows = pad_rows_.device();
      p.bytes_table = job.out_bytes;
      p.launch_slot = job.launch_slot;
      p.advance = c + 1 == chunks;
    }
    uint64_t max_bytes = 0;
    for (int k = 0; k < p.count; ++k) {
      const TensorRef& st = job.entry->static_outputs[first + k];
      p.copies[k] = StageCopy{st.data, nullptr, st.span_bytes()};
      max_bytes = std::max<uint64_t>(max_bytes, p.copies[k].bytes);
    }
    cudaError_t err = LaunchStage(p, max_bytes, job.stream);
    if (err != cudaSuccess) return CudaStatus(err, "staging kernel launch", Quoted(name_));
    StatusOr<cudaGraphNode_t> node = cap.LastNode();
    if (!node.ok()) return NameMethod(name_, node.status());
    job.staged.tails.push_back(*node);
  }
  return OkStatus();
}

MethodInstance::StageResult MethodInstance::EndCapture(CaptureJob& job, StreamCapture& cap, Status failure) {
  // The graph's last work, which the completion record node will follow.
  std::vector<cudaGraphNode_t> frontier;
  if (failure.ok()) {
    StatusOr<std::vector<cudaGraphNode_t>> f = cap.Frontier();
    if (f.ok()) frontier = *std::move(f);
    if (!f.ok()) failure = f.status();
  }
  bool capture_error = false;
  StatusOr<Graph> g = cap.End(&capture_error);
  // A CUDA call the capture cannot record usually also invalidates it;
  // ending the capture said whether CUDA saw it that way.
  if (!failure.ok()) return Failed(CaptureStage::kMethod, failure, capture_error);
  if (!g.ok()) return Failed(CaptureStage::kEndCapture, g.status(), capture_error);
  // Every launch records last_launch_event_ as its last node, so Release and
  // a launch on another stream can wait for it without an API call per replay.
  cudaGraphNode_t record = nullptr;
  cudaError_t err = cuda().GraphAddEventRecordNode(&record, g->get(), frontier.data(), frontier.size(),
                                                   last_launch_event_.get());
  if (err != cudaSuccess) {
    return Failed(CaptureStage::kEndCapture, CudaStatus(err, CudaCallName(CudaCall::kGraphAddEventRecordNode)));
  }
  job.staged.record = record;
  job.graph = *std::move(g);
  return std::nullopt;
}

MethodInstance::StageResult MethodInstance::FinalizeCapture(CaptureJob& job, bool recapture) {
  GraphEntry& e = *job.entry;
  if (StatusOr<size_t> n = job.graph->NodeCount(); n.ok()) e.nodes = *n;
  for (HeadNode& h : e.template_heads) {
    cudaKernelNodeParams p{};
    if (cudaError_t err = cuda().GraphKernelNodeGetParams(h.node, &p); err != cudaSuccess) {
      return Failed(CaptureStage::kEndCapture, CudaStatus(err, CudaCallName(CudaCall::kGraphKernelNodeGetParams)));
    }
    h.launch = p;
    h.launch.kernelParams = nullptr;
    h.launch.extra = nullptr;
  }
  e.graph = std::make_shared<Graph>(*std::move(job.graph));
  ChooseGraphBinding(job);
  // Under kRecapture with the cache full, update the least recently used
  // graph's executable in place when CUDA accepts it: cheaper than a new
  // instantiation.
  if (recapture && static_cast<int>(cache_.size()) >= GraphCap()) {
    NvtxScope range(nvtx_, NvtxRange::kCaptureUpdate);
    if (cache_.AdoptLruExecutable(e)) {
      job.updated_in_place = true;
      ++counters_.updates_in_place;
      InstantiateDirect(e, counters_.calls);
      return std::nullopt;
    }
  }
  NvtxScope range(nvtx_, NvtxRange::kCaptureInstantiate);
  StatusOr<GraphExec> exec = GraphExec::Instantiate(*e.graph);
  if (!exec.ok()) return Failed(CaptureStage::kInstantiate, exec.status());
  ++counters_.instantiations;
  e.variants.push_back(ExecVariant{*std::move(exec), e.graph, e.template_heads});
  InstantiateDirect(e, counters_.calls);
  return std::nullopt;
}

Status MethodInstance::CommitCapture(CaptureJob& job, Args inputs, Args outputs, cudaStream_t stream,
                                     int64_t index, bool recapture) {
  if (std::string veto = votes_.Vote({}, "first launch"); !veto.empty()) {
    (void)arena_.AbortCapture();  // its error is logged by the arena; the call goes on eagerly
    ++counters_.capture_failures;
    log_.Info("capture_failed", {{"method", name_}, {"call", index}, {"stage", "vote"}, {"reason", veto},
                                 {"expected", true}});
    TurnGraphsOff(veto, index);
    ++counters_.eager_calls;
    return RunEager(inputs, outputs, stream, CallKind::kEager, index);
  }
  GraphEntry& e = *job.entry;
  const bool verify = VerifiesLaunch(flags_, 1, 0);
  std::optional<VerifiedLaunch> v;
  // The snapshots are taken on this stream, after the last launch wherever
  // it ran. A join that fails here fails again in LaunchGraph, which answers.
  (void)JoinLastLaunch(stream);
  if (verify) v = BeginVerify(e, inputs, GraphOutputs(e, outputs), stream, index);
  std::optional<VerifiedLaunch> probe = BeginProbe(e, inputs, outputs, stream, index);
  std::optional<NvtxScope> range(std::in_place, nvtx_, NvtxRange::kCaptureFirstLaunch);
  if (Status s = LaunchGraph(e.variants.front().exec, stream, index); !s.ok()) {
    // cudaGraphLaunch returned an error, so nothing of the graph ran and the
    // eager retry cannot apply the call twice.
    Status eager = FailCapture(StageFailure{CaptureStage::kFirstLaunch, s}, inputs, outputs, stream, index);
    // The other ranks launched, and vote on the probe once that launch is
    // done: after this rank's eager retry ran the same collectives, its no
    // keeps them from running the probe's.
    if (votes_.several_ranks() && flags_.binding != Binding::kStaged) {
      (void)votes_.Vote("this rank's first launch failed", "binding probe");
    }
    return eager;
  }
  range.reset();
  // On every rank, probing or not: FinishProbe casts the probe's vote.
  FinishProbe(e, probe ? &*probe : nullptr, outputs, stream, index);
  if (probe) RecordLastWork(stream);  // the probe's restoring copies come after the launch's record
  probe.reset();
  arena_.CommitCapture();
  e.launches = 1;
  ++(recapture ? counters_.recaptures : counters_.captures);
  const std::shared_ptr<Graph> graph = e.graph;  // for the dump, after the timing
  const uint64_t graph_number = e.id;
  const size_t nodes = e.direct ? e.direct->nodes() : e.nodes;
  const std::string sig = e.signature.ToString();
  if (flags_.binding != Binding::kStaged) {
    log_.Info("binding", {{"method", name_}, {"call", index}, {"binding", BindingName(e.binding.binding)},
                          {"reason", e.binding.reason}});
  }
  cache_.Insert(std::move(job.entry), GraphCap());
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - job.t0).count();
  counters_.last_capture_us = CaptureMicros(us);
  counters_.capture_us += counters_.last_capture_us;
  log_.Info(recapture ? "recaptured" : "captured", {{"method", name_}, {"call", index}, {"nodes", nodes},
                                                    {"signature", sig}, {"updated_in_place", job.updated_in_place},
                                                    {"us", us}});
  if (!graph_dump_dir_.empty()) DumpCapturedGraph(log_, graph_dump_dir_, name_, device_, graph_number, graph->get());
  SetPhase(MethodPhase::kReplay, index);
  if (verify) return FinishVerify(v ? &*v : nullptr, GraphOutputs(e, outputs), stream, index);
  return OkStatus();
}

Status MethodInstance::FailCapture(const StageFailure& f, Args inputs, Args outputs, cudaStream_t stream,
                                   int64_t index) {
  // Frees exactly what this capture allocated; nothing if it allocated
  // nothing or its arena capture never began.
  (void)arena_.AbortCapture();
  // CUDA's and the arena's errors do not know the method; the user must.
  const Status named = NameMethod(name_, f.status);
  const CaptureFailure c = ClassifyCaptureFailure(f.stage, named, f.cuda_capture_error, /*graph_launched=*/false);
  // Every failure before the first launch is this rank's "no" in the vote
  // the other ranks cast just before their first launch.
  if (f.stage != CaptureStage::kFirstLaunch) (void)votes_.Vote(c.reason, "first launch");
  ++counters_.capture_failures;
  log_.Log(c.expected ? spdlog::level::info : spdlog::level::warn, "capture_failed",
           {{"method", name_}, {"call", index}, {"stage", CaptureStageName(c.stage)}, {"reason", c.status.message()},
            {"expected", c.expected}});
  TurnGraphsOff("capture failed at " + c.reason, index);
  if (!c.retry_eagerly) return c.status;
  // An error the failed capture left in CUDA's last-error slot (a real out
  // of memory, an invalidated capture) is encore's, not the body's: clear it
  // so the eager retry's own launch checks do not take it for theirs.
  (void)cuda().GetLastError();
  ++counters_.eager_calls;
  Status s = RunEager(inputs, outputs, stream, CallKind::kEager, index);
  if (!s.ok()) log_.Error("eager_failed", {{"method", name_}, {"call", index}, {"error", s.ToString()}});
  return s;
}

}  // namespace encore
