// SPDX-License-Identifier: Apache-2.0
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
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/call.h"
#include "encore/graph/method_report.h"
#include "encore/graph/method_spec.h"
#include "encore/policy/method_flags.h"

namespace encore {

class CaptureWorker;
class EventLog;
class Manager;
class MemoryBudget;
class MethodInstance;
class ConstantSet;
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
  // Runs the warmups and captures now, so that the first Run of this
  // signature replays: a server captures before its first request. Under
  // on_new_shape=pad with listed buckets it captures every bucket, largest
  // first, from rows [0, B) of the given tensors (whose batch must be at
  // least the largest bucket's), logging event=precapture per graph with
  // its progress (graph=3/8) and time. The launches write the given
  // outputs; they are not calls or replays (MethodReport::precaptures
  // counts the graphs). With graphs off it does nothing and returns OK.
  Status Precapture(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream);
  // Drops the graphs, their memory and the captured shapes on every device;
  // the method warms up again. Waits for the method's last launches first.
  Status Release();
  // Release() for a method whose constants moved (a KV cache that grew into
  // a new buffer): the new list replaces the registered one and is checked
  // for host memory at the next capture. InvalidArgument, changing nothing,
  // if a constant has a null address.
  Status Release(std::vector<Constant> new_constants);
  // For listed constants whose storage moved to new buffers of the same
  // size (weights loaded into new tensors, a KV cache copied elsewhere):
  // each entry names a listed constant and gives its new address (and
  // read_only); the others stay as listed. Every graph of the method, on
  // every device, in every piece and kept signature or bucket, has its
  // references into the old storage (base or interior pointers, the offset
  // kept) rewritten to the new at once, with no warmup and no capture,
  // where its binding is direct and the reference scan can rewrite every
  // one it finds; otherwise the method's graphs on that device are dropped
  // as Release drops them and it warms up and captures again
  // (event=rebind_recapture with the reason). Either way no launch after
  // this reads the old storage; a launch already queued may, so the old
  // storage must outlive the work queued before (a stream-ordered free
  // does). Counted in MethodReport::rebinds when the graphs were kept.
  // With several ranks every rank calls it at the same point between calls:
  // they vote, so all rewrite or all capture again.
  // InvalidArgument naming the constant, changing nothing, for a name not
  // listed or given twice, a null address or another size.
  Status RebindConstants(std::span<const Constant> constants);
  // Waits for `stream`, then reports a failed device check of this method on
  // the current device.
  Status Synchronize(cudaStream_t stream);
  // A call its caller ran eagerly without Run, having decided that a graph
  // could not serve it (an adapter's own reason: a Python method given a
  // host tensor, or autograd to record): counted in Report()'s calls,
  // eager_calls and eager_by_reason[reason], as encore's own eager calls
  // are, so one report says what every call did. `reason` is a short code
  // (method_report.h lists encore's).
  void CountEagerCall(std::string_view reason);
  // Counts summed over devices; shapes, nodes and outputs of the device used
  // first; memory summed.
  MethodReport Report() const;
  const std::string& name() const { return name_; }
  const MethodFlags& flags() const { return flags_; }

 private:
  friend class Manager;
  static constexpr int kMaxDevices = 64;

  Method(MethodSpec spec, MethodFlags flags, std::shared_ptr<const EventLog> log, std::function<void()> on_run,
         std::shared_ptr<RankConsensus> consensus, std::string graph_dump_dir, std::shared_ptr<MemoryBudget> budget,
         std::shared_ptr<CaptureWorker> worker);
  // Manager::Sleep and Wake on every device: the bytes given back; the
  // first error of a wake.
  StatusOr<size_t> SleepInstances();
  // Manager::CancelPendingCaptures for this method's instances.
  size_t CancelPendingCaptures();
  Status WakeInstances();
  StatusOr<MethodInstance*> InstanceForCurrentDevice();
  // Releases every device's instance. Called with mu_ held.
  Status ReleaseInstances();

  const std::string name_;
  const std::vector<Stage> stages_;  // the body; a method given as one fn has one stage
  const MethodFlags flags_;
  const std::shared_ptr<const EventLog> log_;
  // The manager's hook, which each instance runs before its first call and
  // its first call after a Manager::Sleep: it logs the flags text's unknown
  // names once, and wakes a sleeping manager.
  const std::function<void()> on_run_;
  const std::shared_ptr<RankConsensus> consensus_;
  const std::string graph_dump_dir_;  // empty: no graph dumps
  const std::shared_ptr<MemoryBudget> budget_;  // the manager's graph memory
  const std::shared_ptr<CaptureWorker> worker_;  // the manager's (capture=background)

  // The constants, shared with every instance: the one place they live.
  const std::shared_ptr<ConstantSet> constants_;
  mutable std::mutex mu_;  // guards instances_ and caller_eager_
  std::vector<std::unique_ptr<MethodInstance>> instances_;  // in order of first use
  // CountEagerCall's calls, by reason.
  std::map<std::string, int64_t, std::less<>> caller_eager_;
  // Lock-free lookup on the replay path.
  std::array<std::atomic<MethodInstance*>, kMaxDevices> by_device_{};
};

}  // namespace encore

#endif  // ENCORE_GRAPH_METHOD_H_
