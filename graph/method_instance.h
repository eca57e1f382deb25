// MethodInstance: a method on one device, with that device's graphs,
// graph memory, capture stream and device-check state. Method (method.h)
// makes one per device on first use; this header is internal to graph/.
#ifndef ENCORE_GRAPH_METHOD_INSTANCE_H_
#define ENCORE_GRAPH_METHOD_INSTANCE_H_

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "encore/allocator/graph_arena.h"
#include "encore/core/log.h"
#include "encore/core/status.h"
#include "encore/core/stream.h"
#include "encore/graph/call.h"
#include "encore/graph/graph.h"
#include "encore/graph/method.h"
#include "encore/graph/staging.h"
#include "encore/policy/call_signature.h"
#include "encore/policy/capture_policy.h"
#include "encore/policy/method_flags.h"
#include "encore/policy/rank_consensus.h"
#include "encore/graph/mapped_check_record.h"

namespace encore {

// The phase a method starts in, and after Release(), given its flags; and
// the reason Report gives when graphs=off.
MethodPhase StartingPhase(const MethodFlags& flags);
inline constexpr std::string_view kGraphsOffByFlags = "graphs=off in the method's flags";

class MethodInstance {
 public:
  MethodInstance(std::string name, MethodFn fn, std::optional<std::vector<Constant>> constants, MethodFlags flags,
                 EventLog log, std::shared_ptr<RankConsensus> consensus, int device);
  ~MethodInstance();
  MethodInstance(const MethodInstance&) = delete;
  MethodInstance& operator=(const MethodInstance&) = delete;

  Status Run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream);
  Status Release();
  Status Release(std::vector<Constant> new_constants);
  Status Synchronize(cudaStream_t stream);
  MethodReport Report() const;
  int device() const { return device_; }

 private:
  friend class Call;
  struct GraphEntry;
  struct HeadNode;
  struct Variant;
  // Executables kept per graph, each staged for one set of caller addresses.
  static constexpr size_t kMaxVariants = 8;

  Status ValidateArgs(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) const;
  Status TakeCheckFailure();
  Status RunEager(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream,
                  CallKind kind, int64_t index);
  Status InvokeFn(Call& call);
  // Captures, instantiates (or updates `reuse` in place) and launches once.
  Status CaptureAndLaunch(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                          cudaStream_t stream, int64_t index, bool recapture);
  // On failure, also runs the call eagerly and turns graphs off.
  Status HandleCaptureFailure(const CaptureFailure& failure, std::span<const TensorRef> inputs,
                              std::span<const TensorRef> outputs, cudaStream_t stream, int64_t index);
  bool VariantMatches(const Variant& v, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) const;
  // Rewrites the head nodes of `v` whose caller addresses changed.
  Status Restage(Variant& v, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs);
  Status Replay(GraphEntry& g, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                cudaStream_t stream, int64_t index);
  Status JoinLastLaunch(cudaStream_t stream);
  Status LaunchGraph(const GraphExec& exec, cudaStream_t stream, int64_t index);
  // Why a graph would be wrong for the listed constants (one in host
  // memory), or empty; runs once per capture decision.
  std::string CheckConstants();
  // Casts this rank's vote (`veto` empty = yes) and returns why graphs must
  // go off: `veto`, another rank's no, or a failed vote; empty when all agree.
  std::string Vote(std::string veto, std::string_view what);
  // At the first call, with several ranks: turns graphs off on every rank
  // when their decision flags differ, since their votes would fall out of step.
  void CompareFlagsAcrossRanks();
  void TurnGraphsOff(std::string reason, int64_t index);
  void SetPhase(MethodPhase to, int64_t index);
  void DropGraph(size_t i);
  Status WaitForLastLaunch();
  Status EnsureCheckState();
  StatusOr<void*> Allocate(CallKind kind, cudaStream_t stream, size_t bytes);
  Status Check(const Call& call, const bool* device_cond, std::string_view message);

  const std::string name_;
  const MethodFn fn_;
  std::optional<std::vector<Constant>> constants_;  // guarded by mu_
  const MethodFlags flags_;
  const EventLog log_;
  const std::shared_ptr<RankConsensus> consensus_;
  const int device_;

  mutable std::mutex mu_;
  MethodPhase phase_;
  bool graphs_off_ = false;
  std::string graphs_off_reason_;
  bool constants_checked_ = false;
  bool flags_compared_ = false;
  int warmups_done_ = 0;
  uint64_t next_capture_id_ = 0;
  std::vector<std::unique_ptr<GraphEntry>> graphs_;  // most recently used first
  GraphArena arena_;
  Stream capture_stream_;  // for calls on the legacy default stream
  Event last_launch_event_;
  cudaStream_t last_launch_stream_ = nullptr;
  bool has_launched_ = false;

  // Device checks (record mode). The sequence counter lives in device memory
  // and is bumped by every graph launch's first node; launch_calls_ maps a
  // sequence number back to the call index that launched it.
  std::unique_ptr<MappedCheckRecord> check_record_;
  unsigned long long* device_sequence_ = nullptr;
  uint64_t launches_ = 0;
  static constexpr size_t kLaunchRing = 4096;
  std::array<int64_t, kLaunchRing> launch_calls_{};
  std::vector<std::string> check_messages_;  // indexed by check id

  MethodReport counters_;  // counts only; Report() fills the rest
};

}  // namespace encore

#endif  // ENCORE_GRAPH_METHOD_INSTANCE_H_
