// SPDX-License-Identifier: Apache-2.0
// MethodInstance: a method on one device, with that device's graphs, graph
// memory, capture stream and device-check state. Method (method.h) makes one
// per device on first use; this header is internal to graph/.
//
// The rooms: this class decides what each call does (method_instance.cc) and
// runs the capture pipeline (method_capture.cc); ExecCache keeps the graphs
// and executables (exec_cache.h), DeviceChecks the Call::Check state
// (device_checks.h), MethodVotes the votes across ranks (policy/method_votes.h).
#ifndef ENCORE_GRAPH_METHOD_INSTANCE_H_
#define ENCORE_GRAPH_METHOD_INSTANCE_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "encore/allocator/graph_arena.h"
#include "encore/allocator/memory_budget.h"
#include "encore/core/log.h"
#include "encore/core/nvtx.h"
#include "encore/core/rate_limiter.h"
#include "encore/core/status.h"
#include "encore/core/stream.h"
#include "encore/graph/call.h"
#include "encore/graph/graph.h"
#include "encore/graph/method.h"
#include "encore/policy/binding_policy.h"
#include "encore/policy/capture_policy.h"
#include "encore/policy/learned_buckets.h"
#include "encore/policy/method_flags.h"
#include "encore/policy/method_votes.h"
#include "graph/device_checks.h"
#include "graph/exec_cache.h"
#include "graph/pad_rows.h"
#include "graph/verifier.h"

namespace encore {

class StreamCapture;

// The phase a method starts in, and after Release(), given its flags; and
// the reason Report gives when graphs=off.
MethodPhase StartingPhase(const MethodFlags& flags);
inline constexpr std::string_view kGraphsOffByFlags = "graphs=off in the method's flags";
// Every graph of a method under on_new_shape=pad is staged (SPEC: the
// caller's tensors hold only b rows), with this reason.
BindingChoice PaddedBinding();

class MethodInstance {
 public:
  MethodInstance(std::string name, MethodFn fn, std::optional<std::vector<Constant>> constants, MethodFlags flags,
                 EventLog log, std::shared_ptr<RankConsensus> consensus, int device,
                 std::string graph_dump_dir = {}, std::shared_ptr<MemoryBudget> budget = nullptr);
  ~MethodInstance();
  MethodInstance(const MethodInstance&) = delete;
  MethodInstance& operator=(const MethodInstance&) = delete;

  Status Run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream);
  // Warmups and captures now (every listed bucket under pad, largest
  // first); graph/precapture.cc.
  Status Precapture(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream);
  Status Release();
  Status Release(std::vector<Constant> new_constants);
  Status Synchronize(cudaStream_t stream);
  MethodReport Report() const;
  int device() const { return device_; }

 private:
  friend class Call;
  using Args = std::span<const TensorRef>;

  // --- dispatch (method_instance.cc)
  // The replay fast path: the most recent graph, a matching call.
  bool CanReplayFront(Args inputs, Args outputs) const;
  Status Dispatch(Args inputs, Args outputs, cudaStream_t stream);
  Status ValidateArgs(Args inputs, Args outputs) const;
  // Host-memory constants veto and, with several ranks, the capture vote.
  Action VetoCapture(Action action);
  Status Refuse(Args inputs, Args outputs);
  Status RunWarmup(Args inputs, Args outputs, cudaStream_t stream, int64_t index);
  Status RunEager(Args inputs, Args outputs, cudaStream_t stream, CallKind kind, int64_t index);
  Status InvokeFn(Call& call);
  // Refuses a call made from inside this method's own body on this thread,
  // which would otherwise deadlock on mu_.
  Status RejectReentry(std::string_view what) const;
  Status Replay(GraphEntry& g, Args inputs, Args outputs, cudaStream_t stream, int64_t index);
  Status JoinLastLaunch(cudaStream_t stream);
  // `bumps_sequence`: the graph's launch bumps the device-check sequence,
  // so the launch ring records it. The graph's last node records
  // last_launch_event_ (staged and direct graphs alike).
  Status LaunchGraph(const GraphExec& exec, cudaStream_t stream, int64_t index, bool bumps_sequence = true);
  // Records last_launch_event_ on `stream` after encore's own work there
  // (the probe's, verification's), so a later wait covers it.
  void RecordLastWork(cudaStream_t stream);
  Status LastLaunchUnknown() const;
  // binding=auto's second look at a direct graph once its replays show
  // whether the caller's addresses recur (policy/binding_policy.h).
  void RejudgeAutoBinding(GraphEntry& g, int64_t index);
  Status WaitForLastLaunch();

  // --- verification (method_verify.cc). The device state a launch of `g`
  // changes in place (listed constants, shims' generator offsets), which
  // verification and the binding probe put back before running the call
  // again.
  std::vector<DeviceStateRegion> StateRegions(const GraphEntry& g) const;
  // On launches VerifiesLaunch picks, before the launch: the snapshots, or
  // nullopt when this launch cannot be checked (logged).
  std::optional<VerifiedLaunch> BeginVerify(const GraphEntry& g, Args inputs, Args outputs, cudaStream_t stream,
                                            int64_t index);
  // After it: the eager re-run and comparison (v null: nothing to check,
  // but the ranks still vote); a mismatch turns graphs off.
  Status FinishVerify(VerifiedLaunch* v, Args outputs, cudaStream_t stream, int64_t index);
  // Where a launch of `g` leaves its results: the caller's outputs, or with
  // copy_outputs=false the graph's static outputs (which the caller reads).
  Args GraphOutputs(const GraphEntry& g, Args outputs) const {
    return flags_.copy_outputs ? outputs : Args(g.static_outputs);
  }
  // The difference between the launch and its eager re-run, or empty.
  StatusOr<std::string> CheckLaunch(VerifiedLaunch& v, Args outputs, cudaStream_t stream, int64_t index);
  // Why a graph would be wrong for the listed constants (one in host
  // memory), or empty; runs once per capture decision.
  std::string CheckConstants();
  void TurnGraphsOff(std::string reason, int64_t index);
  void SetPhase(MethodPhase to, int64_t index);
  StatusOr<void*> Allocate(CallKind kind, cudaStream_t stream, size_t bytes);

  // --- padding to buckets (pad_buckets.cc): a call of batch b replays the
  // graph of the smallest bucket >= b, captured for the call's tensors seen
  // at the bucket's batch (PaddedArgs); the head staging node copies b rows
  // and zeroes the rest, the tail copies b rows out.
  struct PaddedArgs {
    Args inputs;
    Args outputs;
  };
  Status DispatchPadded(Args inputs, Args outputs, cudaStream_t stream);
  // The calls that do not take the fast path of DispatchPadded.
  Status DispatchPaddedSlow(Args inputs, Args outputs, cudaStream_t stream, int64_t batch, bool has_bucket);
  Status ReplayPadded(GraphEntry& g, Args inputs, Args outputs, cudaStream_t stream, int64_t index,
                      int64_t batch);
  // Hands the next graph launch its batch through the rows ring.
  Status StageRows(int64_t batch);
  // Learned buckets: the learner's review, and the graphs of buckets no
  // longer chosen dropped.
  void ReviewBuckets(int64_t index);
  // Graphs kept at most: max_graphs, or every listed bucket.
  int GraphCap() const;

  // --- the graph-memory budget (graph_memory.cc)
  // The arena a capture of these tensors reserves before it begins.
  size_t CaptureReserveBytes(Args graph_inputs, Args graph_outputs) const;
  // Reserves the capture's growth in the manager's budget, dropping this
  // method's least recently used graphs if that makes it fit; false (logged
  // once, counted) when it cannot fit.
  bool MakeRoomForCapture(Args graph_inputs, Args graph_outputs, int64_t index);
  // Sets the budget's count of this instance to what its arena holds.
  void SettleGraphMemory();
  // CaptureAndLaunch within the budget, else the call eagerly.
  Status CaptureWithinBudget(Args inputs, Args outputs, cudaStream_t stream, int64_t index, bool recapture,
                             const PaddedArgs* padded = nullptr);

  // --- the capture pipeline (method_capture.cc): prepare, record,
  // finalize, commit; a failing stage hands FailCapture what went wrong.
  struct CaptureJob;

 public:  // for the pipeline's helpers in method_capture.cc
  struct StageFailure {
    CaptureStage stage = CaptureStage::kBegin;
    Status status;
    bool cuda_capture_error = false;
  };
  using StageResult = std::optional<StageFailure>;  // nullopt: the stage succeeded

 private:
  // `padded`: the graph is captured for those tensors (a bucket's batch)
  // while the call's own are staged in and out.
  Status CaptureAndLaunch(Args inputs, Args outputs, cudaStream_t stream, int64_t index, bool recapture,
                          const PaddedArgs* padded = nullptr);
  StageResult PrepareCapture(CaptureJob& job, Args inputs, Args outputs, cudaStream_t stream);
  // The arena's capture begins; static inputs, outputs and the output table.
  Status AllocateStaticBuffers(CaptureJob& job, Args inputs, Args outputs);
  StageResult RecordCapture(CaptureJob& job, Args inputs, Args outputs, int64_t index);
  Status AddHeadNodes(CaptureJob& job, StreamCapture& cap, Args inputs, Args outputs);
  Status AddTailNodes(CaptureJob& job, StreamCapture& cap, size_t n_out);
  StageResult EndCapture(CaptureJob& job, StreamCapture& cap, Status failure);
  StageResult FinalizeCapture(CaptureJob& job, bool recapture);
  Status CommitCapture(CaptureJob& job, Args inputs, Args outputs, cudaStream_t stream, int64_t index,
                       bool recapture);
  // --- direct binding (method_binding.cc). After the capture: the graph's
  // direct form and the binding chosen (BindingFacts from its scan).
  void ChooseGraphBinding(CaptureJob& job);
  // The direct form's first executable, after the staged one.
  void InstantiateDirect(GraphEntry& e, int64_t index);
  // Around the capture's first launch (the staged graph): the probe's
  // snapshots before it; after it the probe, which poisons the static
  // buffers, launches the direct form on the snapshots and compares. With
  // several ranks, all launch the probe or none (a vote just before the
  // launch). A direct form that differs, or cannot be probed, is dropped
  // and the graph stays staged, with the reason.
  std::optional<VerifiedLaunch> BeginProbe(GraphEntry& e, Args inputs, Args outputs, cudaStream_t stream,
                                           int64_t index);
  void FinishProbe(GraphEntry& e, VerifiedLaunch* probe, Args outputs, cudaStream_t stream, int64_t index);
  // All the probe's launch needs (state rewound, no check failure pending,
  // buffers poisoned, *exec bound to the snapshots); why not, or empty.
  std::string PrepareProbe(GraphEntry& e, VerifiedLaunch& probe, cudaStream_t stream, const GraphExec** exec);
  // The probe's launch and comparison; why the graph stays staged, or empty.
  // A check failure in the probe's run is its evidence, taken here.
  std::string RunProbe(VerifiedLaunch& probe, const GraphExec& exec, Args outputs, cudaStream_t stream);
  void StageInstead(GraphEntry& e, std::string why, int64_t index);
  // Frees the capture's memory, votes no, and runs the call eagerly with
  // graphs off (when nothing of the graph ran).
  Status FailCapture(const StageFailure& f, Args inputs, Args outputs, cudaStream_t stream, int64_t index);

  const std::string name_;
  const MethodFn fn_;
  std::optional<std::vector<Constant>> constants_;  // guarded by mu_
  const MethodFlags flags_;
  const EventLog log_;
  const int device_;
  const std::string graph_dump_dir_;  // empty: no graph dumps
  const NvtxMethodRanges nvtx_{name_};  // this method's range names, registered once
  RateLimiter refusal_log_limit_;       // one refused line per second, then a count

  mutable std::mutex mu_;
  MethodPhase phase_;
  bool graphs_off_ = false;
  std::string graphs_off_reason_;
  bool constants_checked_ = false;
  int warmups_done_ = 0;
  uint64_t next_capture_id_ = 0;
  GraphArena arena_;
  ExecCache cache_{&arena_, &log_, &name_};
  DeviceChecks checks_{&name_, flags_.checks, &log_};
  MethodVotes votes_;
  Stream capture_stream_;  // for calls on the legacy default stream
  Event last_launch_event_;
  cudaStream_t last_launch_stream_ = nullptr;
  bool has_launched_ = false;
  // Whether last_launch_event_ marks the end of the last launch.
  bool last_launch_recorded_ = false;
  bool verify_refusal_logged_ = false;

  // Padding to buckets: whether on_new_shape=pad; the buckets in force
  // (listed, or learned so far); the learner; the call's padded views,
  // kept to reuse their storage.
  const bool pad_ = flags_.on_new_shape == ShapePolicy::kPad;
  std::vector<int64_t> buckets_ = flags_.buckets;
  BucketLearner learner_{flags_.max_graphs};
  std::vector<TensorRef> pad_inputs_;
  std::vector<TensorRef> pad_outputs_;
  PadRows pad_rows_;

  // The manager's graph-memory budget (null: none), the bytes of this
  // instance it counts, and whether over_budget was logged.
  const std::shared_ptr<MemoryBudget> budget_;
  size_t budget_counted_ = 0;
  bool over_budget_logged_ = false;

  MethodReport counters_;  // counts only; Report() fills the rest
};

}  // namespace encore

#endif  // ENCORE_GRAPH_METHOD_INSTANCE_H_
