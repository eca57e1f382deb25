// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/store/internal/launch.h"

namespace encore {

Status LaunchGraph(const Launcher& l, const GraphExec& exec, cudaStream_t stream, int64_t index, bool bumps_sequence,
                   bool records) {
  ENCORE_RETURN_IF_ERROR(l.last.Join(stream));
  ENCORE_RETURN_IF_ERROR(exec.Launch(stream));
  if (l.pad.on()) l.pad.rows().Launched();
  if (bumps_sequence) l.checks.RecordLaunch(index);
  l.last.Launched(stream, records);
  return OkStatus();
}

Status LaunchAroundDirect(const Launcher& l, PieceGraph& piece, cudaStream_t stream, int64_t index,
                          bool* body_launched) {
  ENCORE_RETURN_IF_ERROR(l.last.Join(stream));
  // The launch ring follows the device's sequence: recorded once a head
  // that bumps it was launched, even if what follows fails.
  bool bumped = false;
  Status heads = piece.staged.LaunchHeads(piece.direct->bumps_sequence(), stream, &bumped);
  if (bumped) l.checks.RecordLaunch(index);
  ENCORE_RETURN_IF_ERROR(heads);
  ENCORE_RETURN_IF_ERROR(piece.direct->first_exec().Launch(stream));
  *body_launched = true;
  if (!bumped && piece.direct->bumps_sequence()) l.checks.RecordLaunch(index);  // the body's own head
  // The tails run after the direct graph's own record node: the call
  // records the end (LastLaunch::EndCall).
  l.last.Launched(stream, /*records=*/false);
  return piece.staged.LaunchTails(stream);
}

Status SetPadRows(const Launcher& l, int64_t batch) {
  ENCORE_RETURN_IF_ERROR(l.pad.rows().Prepare(l.method));
  if (l.pad.rows().behind()) ENCORE_RETURN_IF_ERROR(l.last.Wait());
  l.pad.rows().Set(batch);
  return OkStatus();
}

}  // namespace encore
