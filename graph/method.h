// Method: one named, kernel-launching callable and its graphs. It warms up,
// captures, replays, and refuses, runs eagerly or recaptures when a graph
// would give a wrong answer.
#ifndef ENCORE_GRAPH_METHOD_H_
#define ENCORE_GRAPH_METHOD_H_

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
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
#include "encore/core/tensor.h"
#include "encore/graph/call.h"
#include "encore/graph/graph.h"
#include "encore/graph/staging.h"
#include "encore/policy/call_signature.h"
#include "encore/policy/capture_policy.h"
#include "encore/policy/method_flags.h"

namespace encore {

namespace shims {
class MappedCheckRecord;
}

// A device buffer whose address stays fixed for a graph's life: weights, and
// state a method updates in place (a KV cache, a counter).
struct Constant {
  std::string name;
  const void* data = nullptr;
  size_t bytes = 0;
};

using MethodFn = std::function<Status(Call&)>;

// InvalidArgument naming the first constant with a null address.
Status ValidateConstants(std::string_view method, const std::vector<Constant>& constants);

struct MethodSpec {
  std::string name;
  MethodFn fn;
  // nullopt: the method cannot list its constants.
  std::optional<std::vector<Constant>> constants;
  // nullopt: the manager's defaults, overridden by the flags text.
  std::optional<MethodFlags> flags;
};

enum class MethodPhase { kWarmup, kCapture, kReplay, kEager };
std::string_view MethodPhaseName(MethodPhase p);

struct MethodReport {
  std::string name;
  MethodPhase phase = MethodPhase::kWarmup;
  MethodFlags flags;
  int64_t calls = 0;
  int64_t warmup_calls = 0;
  int64_t captures = 0;
  int64_t replays = 0;
  int64_t eager_calls = 0;
  int64_t refusals = 0;
  int64_t recaptures = 0;
  int64_t capture_failures = 0;
  int64_t instantiations = 0;      // executables made with cudaGraphInstantiate
  int64_t updates_in_place = 0;    // recaptures applied with cudaGraphExecUpdate
  int64_t exec_variants = 0;       // extra executables made for recurring caller addresses
  int64_t check_failures = 0;
  std::string graphs_off_reason;   // empty while graphs are on
  // Input shapes of each kept graph, most recently used first.
  std::vector<std::vector<Shape>> captured_input_shapes;
  size_t graph_nodes = 0;          // nodes of the most recently used graph
  MemoryStats memory;
  // With copy_outputs=false: the most recent graph's output buffers, valid
  // until the method's next call.
  std::vector<TensorRef> static_outputs;

  std::string ToJson() const;
};

class Manager;

class Method {
 public:
  ~Method();
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

  // Runs the method on `stream`. Errors in the arguments are InvalidArgument
  // and change nothing; see MethodFlags for what a shape change does.
  Status Run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream);
  // Drops the graphs, their memory and the captured shapes; the method warms
  // up again. Waits for the method's last launch first.
  Status Release();
  // Release() for a method whose constants moved (a KV cache that grew into
  // a new buffer): the new list replaces the registered one and is checked
  // for host memory at the next capture. InvalidArgument, changing nothing,
  // if a constant has a null address.
  Status Release(std::vector<Constant> new_constants);
  // Waits for `stream`, then reports a failed device check of this method.
  Status Synchronize(cudaStream_t stream);
  MethodReport Report() const;
  const std::string& name() const { return name_; }
  const MethodFlags& flags() const { return flags_; }

 private:
  friend class Manager;
  friend class Call;
  struct GraphEntry;
  struct HeadNode;
  struct Variant;
  // Executables kept per graph, each staged for one set of caller addresses.
  static constexpr size_t kMaxVariants = 8;

  Method(std::string name, MethodFn fn, std::optional<std::vector<Constant>> constants, MethodFlags flags,
         EventLog log, std::function<void()> on_first_run);

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
  // Host-memory constants turn graphs off; run once per capture decision.
  void CheckConstants();
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
  const std::function<void()> on_first_run_;

  mutable std::mutex mu_;
  MethodPhase phase_;
  bool graphs_off_ = false;
  std::string graphs_off_reason_;
  bool constants_checked_ = false;
  int warmups_done_ = 0;
  uint64_t next_capture_id_ = 0;
  uint64_t use_clock_ = 0;
  std::vector<std::unique_ptr<GraphEntry>> graphs_;  // most recently used first
  GraphArena arena_;
  Stream capture_stream_;  // for calls on the legacy default stream
  Event last_launch_event_;
  cudaStream_t last_launch_stream_ = nullptr;
  bool has_launched_ = false;

  // Device checks (record mode). The sequence counter lives in device memory
  // and is bumped by every graph launch's first node; launch_calls_ maps a
  // sequence number back to the call index that launched it.
  std::unique_ptr<shims::MappedCheckRecord> check_record_;
  unsigned long long* device_sequence_ = nullptr;
  uint64_t launches_ = 0;
  static constexpr size_t kLaunchRing = 4096;
  std::array<int64_t, kLaunchRing> launch_calls_{};
  std::vector<std::string> check_messages_;  // indexed by check id

  MethodReport counters_;  // counts only; Report() fills the rest
};

}  // namespace encore

#endif  // ENCORE_GRAPH_METHOD_H_
