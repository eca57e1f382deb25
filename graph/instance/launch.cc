// SPDX-License-Identifier: Apache-2.0
#include "graph/instance/internal/launch.h"

namespace encore {

Status LaunchGraph(InstanceParts& p, const GraphExec& exec, cudaStream_t stream, int64_t index, bool bumps_sequence) {
  ENCORE_RETURN_IF_ERROR(p.last_launch.Join(stream));
  ENCORE_RETURN_IF_ERROR(exec.Launch(stream));
  if (p.pad.on()) p.pad.rows().Launched();
  if (bumps_sequence) p.checks.RecordLaunch(index);
  p.last_launch.Launched(stream, p.GraphsRecord());
  return OkStatus();
}

Status StageRows(InstanceParts& p, int64_t batch) {
  ENCORE_RETURN_IF_ERROR(p.pad.rows().Prepare(p.name));
  if (p.pad.rows().behind()) ENCORE_RETURN_IF_ERROR(p.last_launch.Wait());
  p.pad.rows().Stage(batch);
  return OkStatus();
}

}  // namespace encore
