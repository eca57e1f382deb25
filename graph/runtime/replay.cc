// SPDX-License-Identifier: Apache-2.0
// The replay path, and the replays of every other call that matches a graph.
//
// Note [replay path]
// A call of a method reaches cudaGraphLaunch through three functions in two
// files, and nothing else runs when nothing moved:
//   1. Method::Run (graph/method.cc): the instance of the current device
//      (cudaGetDevice and one atomic load, in Method::InstanceForCurrentDevice).
//   2. MethodInstance::Run (this file): the guard. The call is not one of
//      the method's own body calling back (a thread-local read), the
//      instance's mutex is taken, and the call is the held one's
//      (MethodInstance::HeldReplay): the same stream and, tensor by tensor,
//      the same dtype, sizes and strides (SameTensors, this file). Where a
//      tensor's address moved, the held piece binds the new addresses
//      (PieceGraph::Bind: an executable of its own for a recurring set, a
//      rewrite for one seen once) and the held executable is that one.
//   3. The launch: cudaGraphLaunch of the held executable; the call's
//      index, the replay counted in the statistics and in the graph.
// A replay is held (HoldReplay) after the slower path below replayed the
// most recent graph of a method given as one fn, when no feature that acts
// per launch is in use: padding, verification, device checks, If/While,
// binding=auto still judging its choice. Everything that changes what a
// call must do lets the hold go, under the same mutex, before it changes
// anything: the slower path of every other call (RunOther), Precapture,
// Release, RebindConstants, Sleep, Wake and a background capture handed
// back. So sleep, retired owners, the manager's hook and background queues
// are looked at where they change, not per call: a call after a sleep finds
// no hold, and its slower path wakes the manager (WakeForCall); owners kept
// past a capture are destroyed by the next call that takes the slower path,
// by Precapture and Release, and by the Manager's own calls.
// The held call's graph ends with the record node of the method's last
// launch, on the held stream, so the last launch's state needs no update.
// tests/replay_path_gpu_test.cc counts the CUDA calls of held replays.
#include <algorithm>
#include <optional>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/retired_owners.h"
#include "encore/graph/capture/internal/binding_choice.h"
#include "encore/graph/capture/internal/verification.h"
#include "encore/graph/runtime/internal/dispatcher.h"
#include "encore/graph/runtime/internal/method_instance.h"
#include "encore/graph/store/internal/launch.h"

namespace encore {
namespace {

// Whether every tensor has the held one's dtype, sizes and strides; sets
// `*moved` when an address differs. A moved tensor that is null but not
// empty is no call to replay (the slower path rejects it).
bool SameTensors(const std::vector<TensorRef>& held, Args tensors, size_t first, bool* moved) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorRef& a = tensors[i];
    const TensorRef& b = held[first + i];
    if (a.dtype != b.dtype || a.shape != b.shape || a.strides != b.strides) return false;
    if (a.data == b.data) continue;
    if (a.data == nullptr && a.numel() != 0) return false;
    *moved = true;
  }
  return true;
}

}  // namespace

Status MethodInstance::Run(Args inputs, Args outputs, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(s_.runner.RejectReentry("Run"));
  std::unique_lock<std::mutex> lock(mu_);
  HeldReplay& h = held_;
  bool moved = false;
  if (h.piece == nullptr || stream != h.stream || inputs.size() != h.inputs ||
      inputs.size() + outputs.size() != h.tensors.size() || !SameTensors(h.tensors, inputs, 0, &moved) ||
      !SameTensors(h.tensors, outputs, h.inputs, &moved)) {
    lock.unlock();
    return RunOther(inputs, outputs, stream);
  }
  NvtxScope range(s_.info.nvtx, NvtxRange::kReplay);  // one load and a branch without a profiler
  if (moved) {
    StatusOr<BoundExec> bound = h.piece->Bind(inputs, outputs, &s_.ledger.stats.exec_variants, s_.info.log,
                                              s_.info.name, h.entry->signature);
    if (!bound.ok() || !bound->settled) {
      // Refused, or bound to an executable the next call with these
      // addresses would replace: the slower path decides again.
      h = HeldReplay{};
      lock.unlock();
      return bound.ok() ? RunOther(inputs, outputs, stream) : bound.status();
    }
    h.exec = bound->exec;
    h.bumps_sequence = bound->bumps_sequence;
    std::copy(inputs.begin(), inputs.end(), h.tensors.begin());
    std::copy(outputs.begin(), outputs.end(), h.tensors.begin() + static_cast<ptrdiff_t>(h.inputs));
  }
  if (cudaError_t err = cuda().GraphLaunch(h.exec->get(), stream); err != cudaSuccess) {
    h = HeldReplay{};
    return CudaResult(err, CudaCall::kGraphLaunch);
  }
  const int64_t index = ++s_.ledger.stats.calls;
  ++s_.ledger.stats.replays;
  ++h.entry->launches;
  ++h.piece->replays;
  if (h.bumps_sequence) s_.checks.RecordLaunch(index);
  dispatcher_.LogReplay(index);
  return OkStatus();
}

Status MethodInstance::RunOther(Args inputs, Args outputs, cudaStream_t stream) {
  RetiredOwners::Drain(stream);
  std::unique_lock<std::mutex> lock(mu_);
  if (call_hook_due_ || s_.store.arena.asleep()) WakeForCall(lock);
  held_ = HeldReplay{};  // after the hook, which releases mu_
  if (s_.DeviceFailurePending()) ENCORE_RETURN_IF_ERROR(s_.TakeDeviceFailure());
  // A replay destroys no owner, so it needs no log scope.
  Status replayed;
  const FastPath tried = dispatcher_.TryReplay(inputs, outputs, stream, &replayed);
  if (tried == FastPath::kReplayed) {
    s_.store.last_launch.EndCall();  // one branch: only a call whose last launch has no record node records
    if (replayed.ok()) HoldReplay(inputs, outputs, stream);
    return replayed;
  }
  LogScope log_scope(&s_.info.log, s_.info.name);  // owners destroyed in this call log to the application's logger
  Status s = dispatcher_.Run(inputs, outputs, stream, tried);
  s_.store.last_launch.EndCall();  // on every path: the pieces' graphs have no record node
  return s;
}

void MethodInstance::HoldReplay(Args inputs, Args outputs, cudaStream_t stream) {
  // The most recent graph was just replayed on `stream` (TryReplay).
  GraphEntry& g = s_.store.cache.front();
  if (g.pieces.size() != 1 || s_.info.body.segments().size() != 1) return;
  PieceGraph& piece = g.pieces[0];
  const MethodFlags& flags = s_.info.flags;
  if (!piece.graphed || !piece.records || piece.conditional || piece.binding.auto_rejudge) return;
  if (s_.checks.in_use() || s_.control.uses_control.load(std::memory_order_relaxed) || s_.DeviceFailurePending()) {
    return;
  }
  if (flags.verify_every != 0 || Verification(s_.context).Wanted(g, /*capture_launch=*/false, s_.ledger.stats.replays)) {
    return;
  }
  // The executable just launched, while the same addresses would get it
  // again with no work.
  const std::optional<BoundExec> bound = piece.Held(inputs, outputs);
  if (!bound) return;
  held_.entry = &g;
  held_.piece = &piece;
  held_.exec = bound->exec;
  held_.bumps_sequence = bound->bumps_sequence;
  held_.stream = stream;
  held_.inputs = inputs.size();
  held_.tensors.assign(inputs.begin(), inputs.end());
  held_.tensors.insert(held_.tensors.end(), outputs.begin(), outputs.end());
}


FastPath Dispatcher::TryReplay(Args inputs, Args outputs, cudaStream_t stream, Status* result) {
  if (s_.pad.on() || !s_.ledger.graphs.on() || s_.store.cache.empty()) return FastPath::kNotAttempted;
  if (!s_.store.cache.front().signature.Matches(inputs, outputs)) return FastPath::kOtherShape;
  if (!PointersOk(inputs) || !PointersOk(outputs)) return FastPath::kNotAttempted;
  const int64_t index = ++s_.ledger.stats.calls;
  *result = Replay(s_.store.cache.front(), CallPlan{inputs, outputs, inputs, outputs}, stream, index);
  return FastPath::kReplayed;
}

Status Dispatcher::LaunchPiece(GraphEntry& g, PieceGraph& piece, const CallPlan& plan, cudaStream_t stream,
                               int64_t index) {
  if (piece.binding.auto_rejudge) {
    CaptureCounts counts;
    RejudgeAutoBinding(s_.context, piece, index, counts);
    s_.ledger.stats.Add(counts);
  }
  ENCORE_ASSIGN_OR_RETURN(BoundExec bound, piece.Bind(plan.inputs, plan.outputs, &s_.ledger.stats.exec_variants,
                                                      s_.info.log, s_.info.name, g.signature));
  const Launcher launcher = s_.context.launcher();
  if (plan.padded()) ENCORE_RETURN_IF_ERROR(SetPadRows(launcher, plan.batch));
  ENCORE_RETURN_IF_ERROR(LaunchGraph(launcher, *bound.exec, stream, index, bound.bumps_sequence, piece.records));
  ++piece.replays;
  return OkStatus();
}

Status Dispatcher::Replay(GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index) {
  NvtxScope range(s_.info.nvtx, NvtxRange::kReplay);  // one load and a branch without a profiler
  const MethodFlags& flags = s_.info.flags;
  const bool verify = (flags.verify | flags.verify_every) != 0 &&
                      Verification(s_.context).Wanted(g, /*capture_launch=*/false, s_.ledger.stats.replays);
  if (!verify && g.pieces.size() == 1 && s_.info.body.segments().size() == 1 && g.pieces[0].graphed) {
    // A method given as one fn: one launch, nothing else.
    ENCORE_RETURN_IF_ERROR(LaunchPiece(g, g.pieces[0], plan, stream, index));
  } else if (!verify) {
    ENCORE_RETURN_IF_ERROR(ReplaySegments(g, plan, stream, index));
  }
  if (verify) {
    // Verification checks the caller's rows of a padded call against an
    // eager run on them; the snapshots are taken on this stream, after the
    // last launch wherever it ran.
    const Args checked = plan.padded() ? plan.outputs : GraphOutputs(flags, g, plan.outputs);
    ENCORE_RETURN_IF_ERROR(s_.store.last_launch.Join(stream));
    Verification verification(s_.context);
    std::optional<VerifiedLaunch> v = verification.Begin(g, plan.inputs, checked, stream, index);
    ENCORE_RETURN_IF_ERROR(ReplaySegments(g, plan, stream, index));
    ++g.launches;
    ++s_.ledger.stats.replays;
    LogReplay(index);
    Status s = s_.ledger.Apply(verification.Finish(v ? &*v : nullptr, checked, stream, index), index);
    if (!s_.ledger.graphs.on()) GraphsWentOff();
    return s;
  }
  ++g.launches;
  ++s_.ledger.stats.replays;
  LogReplay(index);
  return OkStatus();
}

void Dispatcher::LogReplay(int64_t index) const {
  if (s_.info.log.enabled(spdlog::level::trace)) {
    s_.info.log.Log(spdlog::level::trace, "replay", {{"method", s_.info.name}, {"call", index}});
  }
}

Status Dispatcher::ReplaySegments(GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index) {
  for (const Segment& seg : s_.info.body.segments()) {
    PieceGraph* piece = seg.piece ? &g.pieces[seg.index] : nullptr;
    if (piece != nullptr && piece->graphed) {
      ENCORE_RETURN_IF_ERROR(LaunchPiece(g, *piece, plan, stream, index));
      continue;
    }
    // An eager stage, or a piece whose capture failed: its stages eagerly,
    // on the caller's tensors.
    ENCORE_RETURN_IF_ERROR(s_.runner.RunStages(seg.first, seg.last, plan.inputs, plan.outputs, stream,
                                               CallKind::kEager, index));
  }
  return OkStatus();
}

}  // namespace encore
