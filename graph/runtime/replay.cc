// SPDX-License-Identifier: Apache-2.0
// The one replay path. For a method given as one fn with its buffers where
// they were: the most recent graph matched, the executable found (no CUDA
// call) and one cudaGraphLaunch.
#include <optional>

#include "encore/graph/capture/internal/binding_choice.h"
#include "encore/graph/capture/internal/verification.h"
#include "encore/graph/runtime/internal/dispatcher.h"
#include "encore/graph/store/internal/launch.h"

namespace encore {

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
