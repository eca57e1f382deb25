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
#include "encore/core/tensor.h"
#include "encore/graph/call.h"
#include "encore/policy/method_flags.h"

namespace encore {


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
  int devices = 1;  // devices the method has run on

  std::string ToJson() const;
};

class Manager;
class MethodInstance;
class RankConsensus;

// A method is run per device: the first call on a device makes that
// device's instance (its graphs, memory and streams), so calls on different
// devices neither share graphs nor wait for each other, and each device's
// calls are serialized.
class Method {
 public:
  ~Method();
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

  // Runs the method on `stream`, which must belong to the current device.
  // Errors in the arguments are InvalidArgument and change nothing; see
  // MethodFlags for what a shape change does.
  Status Run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream);
  // Drops the graphs, their memory and the captured shapes on every device;
  // the method warms up again. Waits for the method's last launches first.
  Status Release();
  // Release() for a method whose constants moved (a KV cache that grew into
  // a new buffer): the new list replaces the registered one and is checked
  // for host memory at the next capture. InvalidArgument, changing nothing,
  // if a constant has a null address.
  Status Release(std::vector<Constant> new_constants);
  // Waits for `stream`, then reports a failed device check of this method on
  // the current device.
  Status Synchronize(cudaStream_t stream);
  // Counts summed over devices; shapes, nodes and outputs of the device used
  // first; memory summed.
  MethodReport Report() const;
  const std::string& name() const { return name_; }
  const MethodFlags& flags() const { return flags_; }

 private:
  friend class Manager;
  static constexpr int kMaxDevices = 64;

  Method(std::string name, MethodFn fn, std::optional<std::vector<Constant>> constants, MethodFlags flags,
         EventLog log, std::function<void()> on_first_run, std::shared_ptr<RankConsensus> consensus);
  StatusOr<MethodInstance*> InstanceForCurrentDevice();
  // Releases every device's instance, handing it `new_constants` if given.
  // Called with mu_ held.
  Status ReleaseInstances(const std::vector<Constant>* new_constants);

  const std::string name_;
  const MethodFn fn_;
  const MethodFlags flags_;
  const EventLog log_;
  const std::function<void()> on_first_run_;
  const std::shared_ptr<RankConsensus> consensus_;
  // Set once on_first_run_ has run, so a replay pays one relaxed load for it.
  std::atomic<bool> first_run_done_{false};

  mutable std::mutex mu_;  // guards constants_ and instances_
  std::optional<std::vector<Constant>> constants_;
  std::vector<std::unique_ptr<MethodInstance>> instances_;  // in order of first use
  // Lock-free lookup on the replay path.
  std::array<std::atomic<MethodInstance*>, kMaxDevices> by_device_{};
};

}  // namespace encore

#endif  // ENCORE_GRAPH_METHOD_H_
