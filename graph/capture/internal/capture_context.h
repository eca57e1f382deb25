// SPDX-License-Identifier: Apache-2.0
// CaptureContext: the parts of a method instance a capture, the binding
// probe and verification work on, each owned by the instance
// (graph/runtime) and each with its own job. What they did comes back as
// values (capture_outcome.h); they keep no counters and decide nothing
// about whether the method keeps its graphs.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_CONTEXT_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_CONTEXT_H_

#include "encore/core/internal/stream.h"
#include "encore/graph/body/internal/body_runner.h"
#include "encore/graph/body/internal/method_info.h"
#include "encore/graph/checks/internal/device_checks.h"
#include "encore/graph/control/internal/control_state.h"
#include "encore/graph/pad/internal/padding.h"
#include "encore/graph/store/internal/graph_store.h"
#include "encore/graph/store/internal/launch.h"
#include "encore/graph/verify/internal/constant_watch.h"
#include "encore/policy/internal/method_votes.h"

namespace encore {

struct CaptureContext {
  const MethodInfo& info;
  GraphStore& store;
  const BodyRunner& runner;
  DeviceChecks& checks;
  Padding& pad;
  MethodVotes& votes;
  ControlState& control;
  ConstantWatch& constants;
  Stream& capture_stream;  // for calls on the legacy default stream, made on first use

  Launcher launcher() const { return Launcher{store.last_launch, checks, pad, info.name}; }
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_CAPTURE_CONTEXT_H_
