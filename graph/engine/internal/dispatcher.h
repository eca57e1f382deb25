// SPDX-License-Identifier: Apache-2.0
// Dispatcher: what each call of a method instance does. A call that matches
// the most recent graph (or, padded, its bucket's graph) replays at once,
// validating nothing twice; every other call is validated and handed to the
// one decision (policy/internal/capture_policy.h Decide, the mode as data: plain,
// padded, Precapture), and the action taken is one of warm up, capture,
// replay, run eagerly or refuse. Every replay goes through Replay.
#ifndef ENCORE_GRAPH_ENGINE_INTERNAL_DISPATCHER_H_
#define ENCORE_GRAPH_ENGINE_INTERNAL_DISPATCHER_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "encore/core/status.h"
#include "encore/policy/internal/capture_policy.h"
#include "encore/graph/instance/internal/call_plan.h"
#include "encore/graph/instance/internal/instance_parts.h"

namespace encore {

class Dispatcher {
 public:
  explicit Dispatcher(InstanceParts& parts) : p_(parts) {}

  // The replay path: a call that matches the most recent graph replays it
  // (*result) and true; false (nothing done) for every other call.
  bool TryReplay(Args inputs, Args outputs, cudaStream_t stream, Status* result);
  Status Run(Args inputs, Args outputs, cudaStream_t stream);
  // Warmups and captures before traffic (engine/precapture.cc).
  Status Precapture(Args inputs, Args outputs, cudaStream_t stream);

 private:
  Status RunPadded(Args inputs, Args outputs, cudaStream_t stream);
  // The calls the fast paths do not take: validated, decided, acted on.
  Status Slow(const CallPlan& plan, cudaStream_t stream, int64_t rows);
  Status Act(Action action, const CallPlan& plan, cudaStream_t stream, size_t match, int64_t rows);
  // Every rank casts this vote at its first call, even one whose first call
  // is then rejected.
  void CompareFlagsOnce();
  Status Validate(const CallPlan& plan) const;
  // Host-memory constants veto a capture, and with several ranks every rank
  // votes, so all capture or none do.
  Action VetoCapture(Action action);
  // Why a graph would be wrong for the listed constants (one in host
  // memory), or empty; once per capture decision.
  std::string CheckConstants();
  Status Refuse(const CallPlan& plan);
  Status Warmup(const CallPlan& plan, cudaStream_t stream, int64_t index);
  Status Eager(const CallPlan& plan, cudaStream_t stream, int64_t index, std::string_view reason);
  // The capture within the graph-memory budget, else the call eagerly.
  Status Capture(const CallPlan& plan, cudaStream_t stream, int64_t index, bool recapture);
  // Learned buckets: the learner's review, and the graphs of buckets no
  // longer chosen dropped.
  void ReviewBuckets(int64_t index);
  // Precapture's graph for one batch size (0: the call's own shape).
  Status PrecaptureOne(Args inputs, Args outputs, cudaStream_t stream, int64_t rows, const std::string& progress,
                       bool* stop);

  InstanceParts& p_;
};

// The one replay path: every piece of `g` launched (its executable bound to
// the call's tensors), the eager stages between run, the launch verified
// when the flags ask.
Status Replay(InstanceParts& p, GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index);

}  // namespace encore

#endif  // ENCORE_GRAPH_ENGINE_INTERNAL_DISPATCHER_H_
