// SPDX-License-Identifier: Apache-2.0
// capture=background in the method runtime: a call whose signature has no
// graph queues its capture for the manager's worker and runs eagerly
// (reason capturing), as does every call of that signature until the graph
// is ready; the first call after that launches it (a failed launch ran
// nothing: graphs go off and the call runs eagerly). The worker's part,
// RecordJob, takes the instance's mutex only to pick its job up
// and to hand the result back: never while the body runs, since a call
// may hold that mutex while its own eager run waits for what the worker's
// body holds (a Python body's GIL). Release, Precapture and the instance's
// end abandon the jobs not yet recorded and wait for the one being
// recorded.
//
// Note [What a background capture may coincide with]
// The worker records while the application goes on, on every thread, so
// its capture must be invisible to them; CUDA's rules (the stream-capture
// section of the programming guide) and what an H100 with driver 580 did
// (tests/background_capture_gpu_test.cc OtherThreadsWorkBesideAnOpenCapture
// and ADeviceSyncBesideACaptureIsCapturedAgain, python/tests/
// test_gpu_background.py) decide what that takes:
//   - The capture stream is non-blocking (Stream::Create), so legacy-stream
//     work of other threads never joins it and is never refused.
//   - The capture is thread-local (StreamCapture::Begin), so other threads
//     may make "potentially unsafe" calls (cudaMalloc, cudaFree, pageable
//     copies, stream and event syncs) while it is open: all of them ran
//     beside a capture without breaking it.
//   - The worker thread's own capture mode is relaxed while it works
//     (RecordJob): another thread's capture in global mode (the default,
//     torch.cuda.graph's) then neither refuses the worker's allocations nor
//     is broken by them, and the body may make the per-thread state that
//     libraries make on first use (cuBLAS and cuDNN handles, cuDNN's
//     attention plans and their workspaces: cudaMalloc) on the worker,
//     where no warmup ever ran, inside the capture. In thread-local mode
//     CUDA refused those allocations (an H100 serving an encoder with
//     cuDNN attention: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
//     on every background capture, graphs off; tests/
//     background_capture_gpu_test.cc
//     ABodyThatAllocatesOnFirstUseOnTheWorkerCaptures). What stays refused
//     in every mode is what breaks a capture: a sync of the capturing
//     stream, a device-wide sync.
//   - Other threads' captures of their own (thread-local or global) are
//     other streams' business; the worker never touches their streams.
//   - A device-wide sync (cudaDeviceSynchronize, torch.cuda.synchronize(),
//     and everything that does one first, as torch.cuda.graph's entry
//     does) while the worker's capture is open is refused by CUDA in every
//     capture mode: the calling thread gets cudaErrorStreamCaptureUnsupported
//     and the worker's capture is invalidated. encore cannot stop another
//     thread's sync; encore's own device syncs wait for its captures (the
//     capture fence). What encore does: a background capture that CUDA
//     invalidated, with no refusal from the body itself, is dropped
//     without turning graphs off (logged
//     capture_interrupted); the signature's calls run eagerly, right, with
//     reason capturing, and its next call queues the capture again. Only
//     BackgroundCaptures::kMaxInterruptions in a row (a body that breaks its
//     own capture looks the same) turn graphs off, as any failed capture
//     does. An application that syncs the whole device calls
//     Manager::WaitForCaptures (Python: Manager.synchronize_captures())
//     first, or syncs its streams instead.
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/scoped_capture_mode.h"
#include "encore/graph/capture/internal/capture_pipeline.h"
#include "encore/graph/internal/messages.h"
#include "encore/graph/runtime/internal/dispatcher.h"
#include "encore/graph/runtime/internal/method_instance.h"
#include "encore/graph/store/internal/graph_memory.h"

namespace encore {

void Dispatcher::FillBackground(const CallPlan& plan, size_t match, DecisionInput& in) const {
  in.has_graph = in.has_graph || !s_.background.empty();
  if (!s_.background.on() || plan.precapture || match < s_.store.cache.size()) return;
  if (const BackgroundCaptures::Job* job = s_.background.Find(plan.graph_inputs, plan.graph_outputs)) {
    in.capture_ready = job->state == BackgroundCaptures::State::kReady;
    in.capture_pending = !in.capture_ready;
  }
}

Status Dispatcher::CaptureInBackground(const CallPlan& plan, cudaStream_t stream, int64_t index, bool recapture) {
  BackgroundCaptures& bg = s_.background;
  std::unique_ptr<ReadyCapture> dropped;
  // As many jobs as the method keeps graphs: a ready graph no call came
  // back for makes room; with every one still queued or being recorded,
  // this signature waits for a later call.
  if (!bg.MakeRoom(static_cast<size_t>(s_.pad.GraphCap(s_.info.flags.max_graphs)), &dropped)) {
    return Eager(plan, stream, index, eager_reason::kCapturing);
  }
  if (dropped) (void)s_.store.arena.AbortHeld(dropped->entry->id);
  const size_t reserve = CaptureReserveBytes(s_.store, plan.graph_inputs, plan.graph_outputs,
                                             s_.info.flags.copy_outputs, s_.pad.on());
  const Room room = MakeRoomForCapture(s_.store, s_.info, reserve, index);
  s_.ledger.stats.budget_drops += room.dropped;
  if (!room.fits) {
    ++s_.ledger.stats.over_budget_calls;
    SettleGraphMemory(s_.store);
    return Eager(plan, stream, index, eager_reason::kOverBudget);
  }
  CaptureRequest request{&plan, stream, index, recapture, s_.ledger.warmups_done > 0, s_.ledger.stats.recaptures};
  bool control_ready = false;
  if (std::optional<CaptureOutcome> failed = CapturePipeline(s_.context).PrepareBackground(request, &bg.stream,
                                                                                           &control_ready)) {
    SettleGraphMemory(s_.store);
    return Book(*std::move(failed), plan, stream, index);  // graphs off; the call runs eagerly
  }
  s_.ledger.graphs.SetPhase(MethodPhase::kCapture, index);
  // The call runs first, so what its host code sets up once (a library's
  // handle, a lazily made buffer) is there before the body is recorded.
  Status s = Eager(plan, stream, index, eager_reason::kCapturing);
  if (!s.ok()) {
    SettleGraphMemory(s_.store);  // its capture waits for a call that runs
    return s;
  }
  auto job = std::make_unique<BackgroundCaptures::Job>();
  job->id = ++s_.store.next_capture_id;
  job->signature = CallSignature::Of(plan.graph_inputs, plan.graph_outputs);
  job->call = std::make_unique<JobCall>(plan);
  job->request = request;
  job->request.plan = &job->call->plan;
  job->request.stream = bg.stream.get();
  job->control_ready = control_ready;
  bg.Queue(std::move(job));
  return s;
}

Status Dispatcher::FirstLaunch(const CallPlan& plan, cudaStream_t stream, int64_t index, int64_t rows) {
  BackgroundCaptures::Job* found = s_.background.Find(plan.graph_inputs, plan.graph_outputs);
  if (found == nullptr || !found->ready) {  // Decide saw it ready under the same mutex
    return InternalError(MethodQuoted(s_.info.name) + ": no graph made in the background for this call");
  }
  std::unique_ptr<BackgroundCaptures::Job> job = s_.background.Take(found->id);
  CaptureOutcome out = CapturePipeline(s_.context).LaunchReady(std::move(job->ready), plan, stream, index,
                                                               &s_.ledger.stats.exec_variants);
  SettleGraphMemory(s_.store);
  if (plan.padded() && out.kind == CaptureOutcome::Kind::kCaptured) {
    s_.ledger.stats.real_rows += plan.batch;
    s_.ledger.stats.padded_rows += rows - plan.batch;
  }
  return Book(std::move(out), plan, stream, index);
}

void Dispatcher::AbandonBackground() {
  for (std::unique_ptr<ReadyCapture>& ready : s_.background.Abandon()) {
    (void)s_.store.arena.AbortHeld(ready->entry->id);
  }
  SettleGraphMemory(s_.store);
}

void Dispatcher::GraphsWentOff() {
  s_.constants.DropScratch();  // no launch to check any more
  if (s_.background.on()) AbandonBackground();
}

void MethodInstance::QuiesceBackground(std::unique_lock<std::mutex>& lock) {
  if (!s_.background.on()) return;
  dispatcher_.AbandonBackground();
  WaitWhileRecording(lock);
}

void MethodInstance::WaitWhileRecording(std::unique_lock<std::mutex>& lock) {
  s_.background.changed.wait(lock, [&] { return !s_.background.recording(); });
}

size_t MethodInstance::CancelPendingCaptures() {
  if (!s_.background.on()) return 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s_.background.AbandonQueued();
  }
  return worker_->Cancel(this);
}

void MethodInstance::StopBackground() {
  if (!s_.background.on()) return;
  // Only the worker's tasks: the jobs themselves (and the memory of the
  // ready ones) go with the instance, which may be kept past a capture in
  // sight (Note [Owners destroyed inside a capture]).
  (void)worker_->Cancel(this);
  if (!worker_->OnWorkerThread()) worker_->WaitIdle(this);
}

void MethodInstance::RecordJob(uint64_t id) {
  LogScope log_scope(&s_.info.log, s_.info.name);
  CaptureRequest request;
  bool control_ready = false;
  bool may_retry = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    BackgroundCaptures::Job* job = s_.background.Get(id);
    if (job == nullptr || job->state != BackgroundCaptures::State::kQueued) return;
    if (s_.background.stale(*job) || !s_.ledger.graphs.on()) {
      (void)s_.background.Take(id);
      return;
    }
    job->state = BackgroundCaptures::State::kRecording;
    s_.background.set_recording(true);
    request = job->request;  // its plan lives in the job, which stays until handed back
    control_ready = job->control_ready;
    may_retry = s_.background.interruptions + 1 < BackgroundCaptures::kMaxInterruptions;
  }
  // Relaxed while it records (see the Note); where CUDA refuses the
  // exchange, the mode stays as it was.
  ScopedCaptureMode mode(cudaStreamCaptureModeRelaxed);
  if (mode.error() != cudaSuccess) ClearCudaError();
  // The worker serves every device's methods: this one's, current.
  if (cuda().SetDevice(s_.info.device) != cudaSuccess) ClearCudaError();  // the capture then fails, saying why
  BackgroundRecord record;
  try {
    record = CapturePipeline(s_.context).RecordInBackground(request, id, control_ready, may_retry);
  } catch (const std::exception& e) {
    // Out of memory on the host, say: the job must still be handed back, or
    // Release would wait for it forever.
    record = BackgroundRecord{};
    (void)s_.store.arena.AbortCapture();
    record.failed.kind = CaptureOutcome::Kind::kEager;
    record.failed.turn_off = true;
    record.failed.graphs_off = std::string("capture failed in the background: ") + e.what();
    ++record.failed.counts.capture_failures;
  }
  std::lock_guard<std::mutex> lock(mu_);
  FinishBackground(id, std::move(record));
}

void MethodInstance::FinishBackground(uint64_t id, BackgroundRecord record) {
  held_ = HeldReplay{};
  BackgroundCaptures::Job* job = s_.background.Get(id);
  if (job == nullptr || s_.background.stale(*job) || !s_.ledger.graphs.on()) {
    // Abandoned while it was recorded (Release, Precapture, graphs off).
    if (record.ready) (void)s_.store.arena.AbortHeld(id);
    (void)s_.background.Take(id);
  } else if (record.interrupted) {
    // Note [What a background capture may coincide with]: graphs stay on.
    ++s_.background.interruptions;
    (void)s_.background.Take(id);
  } else if (record.ready) {
    s_.background.interruptions = 0;
    job->ready = std::move(record.ready);
    job->state = BackgroundCaptures::State::kReady;
  } else {
    // A failed capture turns graphs off, as in the foreground; the calls
    // ran eagerly all along.
    const int64_t index = job->request.index;
    (void)s_.background.Take(id);
    (void)s_.ledger.Apply(std::move(record.failed), index, /*precapture=*/false);
    dispatcher_.GraphsWentOff();
  }
  SettleGraphMemory(s_.store);
  s_.background.set_recording(false);
}

}  // namespace encore
