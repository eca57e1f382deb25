// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/runtime/internal/method_instance.h"

#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/store/internal/graph_memory.h"
#include "encore/graph/internal/messages.h"

namespace encore {

MethodInstance::MethodInstance(InstanceSpec spec)
    : worker_(spec.flags.capture_mode == CaptureMode::kBackground ? spec.worker : nullptr),
      wake_manager_(std::move(spec.wake_manager)),
      s_(std::move(spec), this) {
  if (!s_.background.on()) return;
  s_.background.set_submit([this](uint64_t id) { worker_->Submit(this, [this, id] { RecordJob(id); }); });
}

MethodInstance::~MethodInstance() {
  if (s_.background.on()) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      QuiesceBackground(lock);
    }
    // No task of this instance may run once it is gone: the queued ones
    // are dropped, and one the worker already took up (it finds its job
    // abandoned) is waited for.
    worker_->Cancel(this);
    worker_->WaitIdle(this);
  }
  Status s = s_.store.last_launch.Wait();
  if (!s.ok()) s_.info.log.Error("release_failed", {{"method", s_.info.name}, {"error", s.message()}});
  s_.ledger.LogPending();
  s_.store.cache.Clear();
  // The arena frees its slabs after this body; the manager's count of them
  // goes now.
  if (s_.store.budget.budget) s_.store.budget.budget->Adjust(-static_cast<int64_t>(s_.store.budget.counted));
}

Status MethodInstance::Precapture(Args inputs, Args outputs, cudaStream_t stream) {
  LogScope log_scope(&s_.info.log, s_.info.name);
  ENCORE_RETURN_IF_ERROR(s_.runner.RejectReentry("Precapture"));
  std::unique_lock<std::mutex> lock(mu_);
  if (call_hook_due_ || s_.store.arena.asleep()) WakeForCall(lock);
  // Precapture captures in the foreground, now: the worker's jobs go first.
  QuiesceBackground(lock);
  held_ = HeldReplay{};  // after every wait that released mu_
  ENCORE_RETURN_IF_ERROR(s_.TakeDeviceFailure());
  Status s = dispatcher_.Precapture(inputs, outputs, stream);
  s_.store.last_launch.EndCall();
  return s;
}

Status MethodInstance::Release() {
  LogScope log_scope(&s_.info.log, s_.info.name);
  ENCORE_RETURN_IF_ERROR(s_.runner.RejectReentry("Release"));
  std::unique_lock<std::mutex> lock(mu_);
  return ReleaseLocked(lock);
}

Status MethodInstance::ReleaseLocked(std::unique_lock<std::mutex>& lock) {
  QuiesceBackground(lock);
  held_ = HeldReplay{};  // after the wait, which releases mu_
  ENCORE_RETURN_IF_ERROR(s_.store.last_launch.Wait());
  s_.store.cache.Clear();
  s_.constants.DropScratch();
  Status s = s_.store.arena.ReleaseAll();
  SettleGraphMemory(s_.store);
  s_.ledger.warmups_done = 0;
  s_.ledger.constants_checked = false;
  s_.store.last_launch.Forget();
  s_.info.log.Info("released", {{"method", s_.info.name}, {"call", s_.ledger.stats.calls}});
  s_.ledger.graphs.Restart(s_.info.flags, s_.ledger.stats.calls);
  return s;
}

Status MethodInstance::Synchronize(cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(s_.runner.RejectReentry("Synchronize"));
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  std::lock_guard<std::mutex> lock(mu_);
  return s_.TakeDeviceFailure();
}

StatusOr<void*> MethodInstance::Allocate(Call& call, size_t bytes) {
  StatusOr<void*> p = call.kind() == CallKind::kCapture ? s_.store.arena.AllocateCapture(bytes)
                                                         : s_.store.arena.AllocateEager(bytes, call.stream());
  if (!p.ok()) return NameMethod(s_.info.name, p.status());
  return p;
}

Status MethodInstance::Check(Call& call, const bool* device_cond, std::string_view message) {
  return s_.checks.Check(device_cond, message, call.kind() == CallKind::kCapture, call.index(), call.stream());
}

void MethodInstance::FillGraphReport(MethodReport& r) const {
  for (const auto& g : s_.store.cache.entries()) {
    std::vector<Shape> shapes;
    for (const TensorSignature& t : g->signature.inputs()) shapes.push_back(t.shape);
    r.captured_input_shapes.push_back(std::move(shapes));
  }
  if (s_.store.cache.empty()) return;
  const GraphEntry& g = s_.store.cache.front();
  r.binding = Binding::kDirect;
  for (const Segment& seg : s_.info.body.segments()) {
    if (!seg.piece) continue;
    const PieceGraph& piece = g.pieces[seg.index];
    PieceReport pr{s_.info.body.StageNames(seg), piece.graphed, piece.graphed ? piece.binding.reason : piece.eager_reason,
                   piece.graphed ? piece.graph_nodes() : 0, piece.replays};
    if (piece.graphed) {
      r.graph_nodes += pr.graph_nodes;
      r.rebind_sites += piece.binding.rebind_sites;
      if (piece.binding.binding != Binding::kDirect) r.binding = Binding::kStaged;
      if (r.binding_reason.empty()) r.binding_reason = piece.binding.reason;
    }
    r.pieces.push_back(std::move(pr));
  }
  if (r.graph_nodes == 0) r.binding = Binding::kStaged;
  if (!s_.info.flags.copy_outputs) r.static_outputs = g.static_outputs;
}

MethodReport MethodInstance::Report() const {
  // From inside its own body this thread already holds mu_.
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (!s_.runner.InBody()) lock.lock();
  MethodReport r;
  r.name = s_.info.name;
  s_.ledger.stats.FillReport(r);
  r.phase = s_.ledger.graphs.phase();
  r.flags = s_.info.flags;
  r.graphs_off_reason = s_.ledger.graphs.reason();
  r.check_failures = s_.checks.failures();
  FillGraphReport(r);
  r.memory = s_.store.arena.stats();
  r.graph_memory_bytes = r.memory.reserved_bytes;
  r.buckets = s_.pad.buckets();
  return r;
}

}  // namespace encore
