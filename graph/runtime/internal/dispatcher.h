// SPDX-License-Identifier: Apache-2.0
// Dispatcher: what each call of a method instance does. A call that matches
// the most recent graph (or, padded, its bucket's graph) replays at once,
// validating nothing twice; every other call is validated and handed to the
// one decision (policy/internal/capture_policy.h Decide, the mode as data:
// plain, padded, Precapture), and the action taken is one of warm up,
// capture, replay, run eagerly or refuse. Every replay goes through Replay;
// every capture's outcome goes to the Ledger.
#ifndef ENCORE_GRAPH_RUNTIME_INTERNAL_DISPATCHER_H_
#define ENCORE_GRAPH_RUNTIME_INTERNAL_DISPATCHER_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>

#include "encore/core/status.h"
#include "encore/graph/body/internal/call_plan.h"
#include "encore/graph/capture/internal/capture_outcome.h"
#include "encore/graph/runtime/internal/instance_state.h"
#include "encore/graph/store/internal/graph_entry.h"
#include "encore/policy/internal/capture_policy.h"

namespace encore {

// What the replay fast path found.
enum class FastPath {
  kReplayed,      // the call replayed the most recent graph
  kOtherShape,    // the most recent graph's signature differs from the call's
  kNotAttempted,  // no graph, graphs off, padded, or a null pointer
};

class Dispatcher {
 public:
  explicit Dispatcher(InstanceState& state) : s_(state) {}

  // The replay path (replay.cc): a call that matches the most recent graph
  // replays it (*result); every other call comes back untouched, saying why.
  FastPath TryReplay(Args inputs, Args outputs, cudaStream_t stream, Status* result);
  // Every call TryReplay did not replay (`tried`: what it found).
  Status Run(Args inputs, Args outputs, cudaStream_t stream, FastPath tried);
  // Warmups and captures before traffic (precapture.cc).
  Status Precapture(Args inputs, Args outputs, cudaStream_t stream);

 private:
  Status RunPadded(Args inputs, Args outputs, cudaStream_t stream);
  // The calls the fast paths do not take: validated, decided, carried out.
  // `first`: the kept graphs before it were compared already.
  Status Dispatch(const CallPlan& plan, cudaStream_t stream, int64_t rows, size_t first);
  // The one decision, for calls and precaptures alike; `*match` is the kept
  // graph the call matches, or the cache's size.
  // `rows`: a padded call's bucket (-1: none holds it).
  Action Decide(const CallPlan& plan, int64_t rows, size_t first, size_t* match) const;
  Status CarryOut(Action action, const CallPlan& plan, cudaStream_t stream, size_t match, int64_t rows);
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
  // A warmup, timed for the measured padding rule when it wants one.
  Status Warmup(const CallPlan& plan, cudaStream_t stream, int64_t index);
  Status WarmupRun(const CallPlan& plan, cudaStream_t stream, int64_t index);
  Status Eager(const CallPlan& plan, cudaStream_t stream, int64_t index, std::string_view reason);
  // The capture, within the graph-memory budget (nullopt: it does not fit).
  std::optional<CaptureOutcome> CaptureInBudget(const CallPlan& plan, cudaStream_t stream, int64_t index,
                                                bool recapture);
  // A call's capture, else the call eagerly (over_budget); booked. `rows`:
  // a padded call's bucket.
  Status Capture(const CallPlan& plan, cudaStream_t stream, int64_t index, bool recapture, int64_t rows);
  // A capture's outcome booked in the ledger, then what it left to do: the
  // call's eager run, or the capture launch's verification; the call's status.
  Status Book(CaptureOutcome out, const CallPlan& plan, cudaStream_t stream, int64_t index);
  // Learned buckets: the learner's review, and the graphs of buckets no
  // longer chosen dropped.
  void ReviewBuckets(int64_t index);

 public:
  // The trace-level line of every replay, verified or not, the held ones
  // (MethodInstance::Run) included.
  void LogReplay(int64_t index) const;
  // --- capture=background (background.cc), with the instance's mutex held.
  // Abandons the jobs queued for the worker and the graphs it made that
  // no call launched yet (their memory freed); one being recorded is
  // abandoned when the worker hands it back.
  void AbandonBackground();
  // After graphs went off: verification's scratch dropped, the background
  // jobs abandoned.
  void GraphsWentOff();

 private:
  // Decide's view of the call's background capture, and of the graphs
  // queued or made there as graphs the method has.
  void FillBackground(const CallPlan& plan, size_t match, DecisionInput& in) const;
  // The call's capture queued for the worker (when there is room and it
  // fits the budget), after the call ran eagerly (reason capturing).
  Status CaptureInBackground(const CallPlan& plan, cudaStream_t stream, int64_t index, bool recapture);
  // The first launch of the call's graph, which the worker made; booked.
  Status FirstLaunch(const CallPlan& plan, cudaStream_t stream, int64_t index, int64_t rows);
  // Precapture's graph for one batch size (0: the call's own shape).
  Status PrecaptureOne(Args inputs, Args outputs, cudaStream_t stream, int64_t rows, const std::string& progress,
                       bool* stop);

  // --- the one replay path (replay.cc): every piece of `g` launched (its
  // executable bound to the call's tensors), the eager stages between run,
  // the launch verified when the flags ask.
  Status Replay(GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index);
  // A padded call's replay of its bucket of `rows`: counted in real_rows
  // and padded_rows, timed when the measured padding rule wants a sample.
  Status PaddedReplay(GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index, int64_t rows);
  Status LaunchPiece(GraphEntry& g, PieceGraph& piece, const CallPlan& plan, cudaStream_t stream, int64_t index);
  Status ReplaySegments(GraphEntry& g, const CallPlan& plan, cudaStream_t stream, int64_t index);

  InstanceState& s_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_RUNTIME_INTERNAL_DISPATCHER_H_
