// SPDX-License-Identifier: Apache-2.0
// The one replay path. For a method given as one fn with its buffers where
// they were: the executable found (no CUDA call) and one cudaGraphLaunch.
#include <optional>

#include "encore/graph/binding/internal/binding_choice.h"
#include "encore/graph/engine/internal/dispatcher.h"
#include "encore/graph/instance/internal/launch.h"
#include "encore/graph/verify/internal/verification.h"

namespace encore {
namespace {

Status LaunchPiece(InstanceParts& p, GraphEntry& g, PieceGraph& piece, const CallPlan& plan, cudaStream_t stream,
                   int64_t index) {
  if (piece.auto_rejudge) RejudgeAutoBinding(p, piece, index);
  ENCORE_ASSIGN_OR_RETURN(BoundExec bound,
                          piece.Bind(plan.inputs, plan.outputs, &p.counters.exec_variants, p.log, p.name, g.signature));
  if (plan.padded()) ENCORE_RETURN_IF_ERROR(StageRows(p, plan.batch));
  ENCORE_RETURN_IF_ERROR(LaunchGraph(p, *bound.exec, stream, index, bound.bumps_sequence, piece.records));
  ++piece.replays;
  return OkStatus();
}

}  // namespace

Status Replay(InstanceParts& p, GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index) {
  NvtxScope range(p.nvtx, NvtxRange::kReplay);  // one load and a branch without a profiler
  Verification verification(p);
  const bool verify = verification.Wanted(g, /*capture_launch=*/false);
  if (!verify && g.pieces.size() == 1 && p.body.segments().size() == 1 && g.pieces[0].graphed) {
    // A method given as one fn: one launch, nothing else.
    ENCORE_RETURN_IF_ERROR(LaunchPiece(p, g, g.pieces[0], plan, stream, index));
    ++g.launches;
    ++p.counters.replays;
    if (p.log.enabled(spdlog::level::trace)) p.log.Log(spdlog::level::trace, "replay", {{"method", p.name}, {"call", index}});
    return OkStatus();
  }
  // Verification checks the caller's rows of a padded call against an
  // eager run on them.
  const Args checked = plan.padded() ? plan.outputs : GraphOutputs(p, g, plan.outputs);
  std::optional<VerifiedLaunch> v;
  if (verify) {
    // The snapshots are taken on this stream: after the last launch, wherever it ran.
    ENCORE_RETURN_IF_ERROR(p.last_launch.Join(stream));
    v = verification.Begin(g, plan.inputs, checked, stream, index);
  }
  for (const Segment& seg : p.body.segments()) {
    PieceGraph* piece = seg.piece ? &g.pieces[seg.index] : nullptr;
    if (piece != nullptr && piece->graphed) {
      ENCORE_RETURN_IF_ERROR(LaunchPiece(p, g, *piece, plan, stream, index));
      continue;
    }
    // An eager stage, or a piece whose capture failed: its stages eagerly,
    // on the caller's tensors.
    ENCORE_RETURN_IF_ERROR(p.runner.RunStages(seg.first, seg.last, plan.inputs, plan.outputs, stream,
                                              CallKind::kEager, index));
  }
  ++g.launches;
  ++p.counters.replays;
  if (p.log.enabled(spdlog::level::trace)) p.log.Log(spdlog::level::trace, "replay", {{"method", p.name}, {"call", index}});
  if (verify) return verification.Finish(v ? &*v : nullptr, checked, stream, index);
  return OkStatus();
}

}  // namespace encore
