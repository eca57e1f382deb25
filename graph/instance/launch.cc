// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/instance/internal/launch.h"

namespace encore {

Status LaunchGraph(InstanceParts& p, const GraphExec& exec, cudaStream_t stream, int64_t index, bool bumps_sequence,
                   bool records) {
  ENCORE_RETURN_IF_ERROR(p.last_launch.Join(stream));
  ENCORE_RETURN_IF_ERROR(exec.Launch(stream));
  if (p.pad.on()) p.pad.rows().Launched();
  if (bumps_sequence) p.checks.RecordLaunch(index);
  p.last_launch.Launched(stream, records);
  return OkStatus();
}

Status LaunchAroundDirect(InstanceParts& p, PieceGraph& piece, cudaStream_t stream, int64_t index,
                          bool* body_launched) {
  ENCORE_RETURN_IF_ERROR(p.last_launch.Join(stream));
  // The launch ring follows the device's sequence: recorded once a head
  // that bumps it was launched, even if what follows fails.
  bool bumped = false;
  Status heads = piece.staged.LaunchHeads(piece.direct->bumps_sequence(), stream, &bumped);
  if (bumped) p.checks.RecordLaunch(index);
  ENCORE_RETURN_IF_ERROR(heads);
  ENCORE_RETURN_IF_ERROR(piece.direct->first_exec().Launch(stream));
  *body_launched = true;
  if (!bumped && piece.direct->bumps_sequence()) p.checks.RecordLaunch(index);  // the body's own head
  // The tails run after the direct graph's own record node: the call
  // records the end (LastLaunch::EndCall).
  p.last_launch.Launched(stream, /*records=*/false);
  return piece.staged.LaunchTails(stream);
}

Status StageRows(InstanceParts& p, int64_t batch) {
  ENCORE_RETURN_IF_ERROR(p.pad.rows().Prepare(p.name));
  if (p.pad.rows().behind()) ENCORE_RETURN_IF_ERROR(p.last_launch.Wait());
  p.pad.rows().Stage(batch);
  return OkStatus();
}

}  // namespace encore
