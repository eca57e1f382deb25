// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/engine/internal/method_instance.h"

#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/capture/internal/graph_memory.h"
#include "encore/graph/internal/messages.h"

namespace encore {

MethodInstance::MethodInstance(InstanceSpec spec) : parts_(std::move(spec), this) {}

MethodInstance::~MethodInstance() {
  Status s = parts_.last_launch.Wait();
  if (!s.ok()) parts_.log.Error("release_failed", {{"method", parts_.name}, {"error", s.message()}});
  if (int64_t n = parts_.refusal_log_limit.TakePending(); n > 0) {
    parts_.log.Info("refused_not_logged", {{"method", parts_.name}, {"count", n}});
  }
  if (int64_t n = parts_.recapture_log_limit.TakePending(); n > 0) {
    parts_.log.Info("recaptured_not_logged", {{"method", parts_.name}, {"count", n}});
  }
  parts_.cache.Clear();
  // The arena frees its slabs after this body; the manager's count of them
  // goes now.
  if (parts_.budget.budget) parts_.budget.budget->Adjust(-static_cast<int64_t>(parts_.budget.counted));
}

Status MethodInstance::Run(Args inputs, Args outputs, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(parts_.runner.RejectReentry("Run"));
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(parts_.TakeDeviceFailure());
  // A replay destroys no owner, so it needs no log scope.
  if (Status replayed; dispatcher_.TryReplay(inputs, outputs, stream, &replayed)) {
    parts_.last_launch.EndCall();  // one branch: only a call whose last launch has no record node records
    return replayed;
  }
  LogScope log_scope(&parts_.log, parts_.name);  // owners destroyed in this call log to the application's logger
  Status s = dispatcher_.Run(inputs, outputs, stream);
  parts_.last_launch.EndCall();  // on every path: the pieces' graphs have no record node
  return s;
}

Status MethodInstance::Precapture(Args inputs, Args outputs, cudaStream_t stream) {
  LogScope log_scope(&parts_.log, parts_.name);
  ENCORE_RETURN_IF_ERROR(parts_.runner.RejectReentry("Precapture"));
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(parts_.TakeDeviceFailure());
  Status s = dispatcher_.Precapture(inputs, outputs, stream);
  parts_.last_launch.EndCall();
  return s;
}

Status MethodInstance::Release() {
  LogScope log_scope(&parts_.log, parts_.name);
  ENCORE_RETURN_IF_ERROR(parts_.runner.RejectReentry("Release"));
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(parts_.last_launch.Wait());
  parts_.cache.Clear();
  parts_.verify_scratch = VerifyScratch();
  Status s = parts_.arena.ReleaseAll();
  SettleGraphMemory(parts_);
  parts_.warmups_done = 0;
  parts_.constants_checked = false;
  parts_.last_launch.Forget();
  parts_.log.Info("released", {{"method", parts_.name}, {"call", parts_.counters.calls}});
  parts_.graphs.Restart(parts_.flags, parts_.counters.calls);
  return s;
}

Status MethodInstance::Synchronize(cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(parts_.runner.RejectReentry("Synchronize"));
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  std::lock_guard<std::mutex> lock(mu_);
  return parts_.TakeDeviceFailure();
}

StatusOr<void*> MethodInstance::Allocate(Call& call, size_t bytes) {
  StatusOr<void*> p = call.kind() == CallKind::kCapture ? parts_.arena.AllocateCapture(bytes)
                                                        : parts_.arena.AllocateEager(bytes, call.stream());
  if (!p.ok()) return NameMethod(parts_.name, p.status());
  return p;
}

Status MethodInstance::Check(Call& call, const bool* device_cond, std::string_view message) {
  return parts_.checks.Check(device_cond, message, call.kind() == CallKind::kCapture, call.index(), call.stream());
}

void MethodInstance::FillGraphReport(MethodReport& r) const {
  for (const auto& g : parts_.cache.entries()) {
    std::vector<Shape> shapes;
    for (const TensorSignature& t : g->signature.inputs()) shapes.push_back(t.shape);
    r.captured_input_shapes.push_back(std::move(shapes));
  }
  if (parts_.cache.empty()) return;
  const GraphEntry& g = parts_.cache.front();
  r.binding = Binding::kDirect;
  for (const Segment& seg : parts_.body.segments()) {
    if (!seg.piece) continue;
    const PieceGraph& piece = g.pieces[seg.index];
    PieceReport pr{parts_.body.StageNames(seg), piece.graphed, piece.graphed ? piece.binding.reason : piece.eager_reason,
                   piece.graphed ? piece.graph_nodes() : 0, piece.replays};
    if (piece.graphed) {
      r.graph_nodes += pr.graph_nodes;
      r.rebind_sites += piece.rebind_sites;
      if (piece.binding.binding != Binding::kDirect) r.binding = Binding::kStaged;
      if (r.binding_reason.empty()) r.binding_reason = piece.binding.reason;
    }
    r.pieces.push_back(std::move(pr));
  }
  if (r.graph_nodes == 0) r.binding = Binding::kStaged;
  if (!parts_.flags.copy_outputs) r.static_outputs = g.static_outputs;
}

MethodReport MethodInstance::Report() const {
  // From inside its own body this thread already holds mu_.
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (!parts_.runner.InBody()) lock.lock();
  MethodReport r = parts_.counters;
  r.phase = parts_.graphs.phase();
  r.flags = parts_.flags;
  r.graphs_off_reason = parts_.graphs.reason();
  r.check_failures = parts_.checks.failures();
  FillGraphReport(r);
  r.memory = parts_.arena.stats();
  r.graph_memory_bytes = r.memory.reserved_bytes;
  r.buckets = parts_.pad.buckets();
  return r;
}

}  // namespace encore
