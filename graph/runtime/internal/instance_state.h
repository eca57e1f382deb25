// SPDX-License-Identifier: Apache-2.0
// InstanceState: the parts of one method instance (the method on one
// device), each an object with its own job, owned here. None of them is
// handed on whole: the capture pipeline, the binding probe and
// verification get a CaptureContext of the parts they work on, a launch
// gets a Launcher, the graph-memory budget gets the GraphStore. What they
// did comes back as values, which the Ledger books. The owner's
// (MethodInstance's) mutex serializes every use.
#ifndef ENCORE_GRAPH_RUNTIME_INTERNAL_INSTANCE_STATE_H_
#define ENCORE_GRAPH_RUNTIME_INTERNAL_INSTANCE_STATE_H_

#include <functional>
#include <memory>
#include <string>

#include "encore/allocator/internal/memory_budget.h"
#include "encore/core/internal/log.h"
#include "encore/core/internal/stream.h"
#include "encore/core/status.h"
#include "encore/graph/body/internal/body_runner.h"
#include "encore/graph/body/internal/constant_set.h"
#include "encore/graph/body/internal/method_body.h"
#include "encore/graph/body/internal/method_info.h"
#include "encore/graph/capture/internal/capture_context.h"
#include "encore/graph/checks/internal/device_checks.h"
#include "encore/graph/control/internal/control_state.h"
#include "encore/graph/internal/call_host.h"
#include "encore/graph/pad/internal/padding.h"
#include "encore/core/internal/capture_worker.h"
#include "encore/graph/runtime/internal/background_captures.h"
#include "encore/graph/runtime/internal/ledger.h"
#include "encore/graph/store/internal/graph_store.h"
#include "encore/graph/verify/internal/constant_watch.h"
#include "encore/policy/internal/method_votes.h"
#include "encore/policy/method_flags.h"
#include "encore/policy/rank_consensus.h"

namespace encore {

// What the instance is made of, as the Method hands it over.
struct InstanceSpec {
  std::string name;
  MethodBody body;
  std::shared_ptr<ConstantSet> constants;
  MethodFlags flags;
  EventLog log;
  std::shared_ptr<RankConsensus> consensus;
  int device = 0;
  std::string graph_dump_dir;            // empty: no graph dumps
  std::shared_ptr<MemoryBudget> budget;  // the manager's graph memory; null: none
  std::shared_ptr<CaptureWorker> worker;  // the manager's, for capture=background
  std::function<void()> wake_manager;     // a call found the instance asleep (Manager::Sleep)
};

struct InstanceState {
  InstanceState(InstanceSpec spec, internal::CallHost* host);
  InstanceState(const InstanceState&) = delete;
  InstanceState& operator=(const InstanceState&) = delete;

  // A failed device check or a loop stopped at its bound since the last
  // call, as the FailedPrecondition that call returns; OK otherwise.
  Status TakeDeviceFailure();
  // Whether TakeDeviceFailure has anything to take: reads of mapped memory
  // and two flags, inline, so a replay pays no call for it.
  bool DeviceFailurePending() const {
    return checks.failure_pending() || !control.eager_runaway.empty() || control.loops.pending();
  }

  MethodInfo info;
  GraphStore store;
  BodyRunner runner;
  DeviceChecks checks;
  Padding pad;
  MethodVotes votes;
  ControlState control;
  ConstantWatch constants;
  Stream capture_stream;  // for calls on the legacy default stream
  Ledger ledger{info};
  BackgroundCaptures background;
  CaptureContext context{info, store, runner, checks, pad, votes, control, constants, capture_stream};
};

}  // namespace encore

#endif  // ENCORE_GRAPH_RUNTIME_INTERNAL_INSTANCE_STATE_H_
