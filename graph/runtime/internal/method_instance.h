// SPDX-License-Identifier: Apache-2.0
// MethodInstance: a method on one device. Method (graph/method.h) makes one
// per device on first use. It owns the instance's parts (InstanceState),
// serializes every call with its mutex, serves the Calls of its body
// (CallHost) and hands each call to the Dispatcher. Under
// capture=background it also runs the tasks the manager's worker takes up
// for it (background.cc).
#ifndef ENCORE_GRAPH_RUNTIME_INTERNAL_METHOD_INSTANCE_H_
#define ENCORE_GRAPH_RUNTIME_INTERNAL_METHOD_INSTANCE_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "encore/core/status.h"
#include "encore/graph/body/internal/constant_moves.h"
#include "encore/graph/call.h"
#include "encore/graph/method_report.h"
#include "encore/graph/runtime/internal/dispatcher.h"
#include "encore/graph/runtime/internal/instance_state.h"
#include "encore/graph/internal/call_host.h"

namespace encore {

class MethodInstance final : public internal::CallHost {
 public:
  explicit MethodInstance(InstanceSpec spec);
  ~MethodInstance();
  MethodInstance(const MethodInstance&) = delete;
  MethodInstance& operator=(const MethodInstance&) = delete;

  // The replay path (replay.cc, Note [replay path]).
  Status Run(Args inputs, Args outputs, cudaStream_t stream);
  Status Precapture(Args inputs, Args outputs, cudaStream_t stream);
  // Drops the graphs, their memory and the captured shapes (the constants
  // may have been replaced in the shared ConstantSet first).
  Status Release();
  // Method::RebindConstants on this device (rebind.cc): the graphs'
  // references to the constants that moved rewritten, or the graphs
  // dropped as by Release when that cannot be done safely.
  Status RebindConstants(const ConstantRebind& rebind);
  Status Synchronize(cudaStream_t stream);
  // Manager::Sleep and Wake on this device (sleep.cc): waits for the last
  // launch and gives back the memory behind the graph arena, keeping its
  // addresses (the bytes given back); maps memory back. A wake that cannot
  // map it drops the graphs, as Release does, and returns why.
  StatusOr<size_t> Sleep();
  Status Wake();
  MethodReport Report() const;
  int device() const { return s_.info.device; }
  // Drops this instance's tasks queued on the manager's worker and waits
  // for the one it runs (not from the worker itself): after it, no body of
  // this instance runs on the worker. For a Method going away, before its
  // instances may be kept past a capture in sight.
  void StopBackground();
  // The queued jobs dropped and their tasks taken off the worker's queue;
  // the one being recorded goes on. How many.
  size_t CancelPendingCaptures();

  // CallHost: what the body's Calls ask of this instance.
  StatusOr<void*> Allocate(Call& call, size_t bytes) override;
  Status Check(Call& call, const bool* device_cond, std::string_view message) override;
  Status If(Call& call, const bool* device_cond, const MethodFn& then_fn) override;
  Status While(Call& call, const bool* device_cond, const MethodFn& body_fn, int64_t max_iterations) override;

 private:
  // The replay the next call like the last one repeats with one launch
  // (Note [replay path]); `piece` null: none is held. Let go, under mu_,
  // by everything that changes what a call must do.
  struct HeldReplay {
    GraphEntry* entry = nullptr;
    PieceGraph* piece = nullptr;
    const GraphExec* exec = nullptr;
    bool bumps_sequence = false;
    cudaStream_t stream = nullptr;
    size_t inputs = 0;
    std::vector<TensorRef> tensors;  // the call's inputs, then its outputs
  };
  // Every call the held replay does not answer (replay.cc): the matching
  // graph replayed, else the Dispatcher's decision.
  Status RunOther(Args inputs, Args outputs, cudaStream_t stream);
  // After RunOther replayed the most recent graph: held when nothing acts
  // per launch (Note [replay path]).
  void HoldReplay(Args inputs, Args outputs, cudaStream_t stream);
  void FillGraphReport(MethodReport& r) const;
  // --- capture=background (background.cc)
  // The worker's task: records job `id` (the mutex taken only to pick it
  // up and to hand it back).
  void RecordJob(uint64_t id);
  void FinishBackground(uint64_t id, BackgroundRecord record);
  // With `lock` (of mu_) held: abandons the background jobs and waits until
  // none is being recorded (Release, Precapture, the instance's end).
  void QuiesceBackground(std::unique_lock<std::mutex>& lock);
  // With `lock` held: until no job is being recorded (Sleep, which keeps
  // the ready ones).
  void WaitWhileRecording(std::unique_lock<std::mutex>& lock);

  const std::shared_ptr<CaptureWorker> worker_;  // the manager's; null without capture=background

  // Release with `lock` (of mu_) held.
  Status ReleaseLocked(std::unique_lock<std::mutex>& lock);
  // Wake with `lock` (of mu_) held.
  Status WakeLocked(std::unique_lock<std::mutex>& lock);
  // The first call, or the first after a sleep (call_hook_due_): the
  // manager's hook runs (mu_ released meanwhile), which wakes the manager
  // when asleep; then this instance wakes if a sleep came in between.
  void WakeForCall(std::unique_lock<std::mutex>& lock);
  // Every piece's references to the moved constants, or why they cannot all
  // be rewritten; then the rewrite of what was found.
  std::string FindConstants(const ConstantRebind& rebind, std::vector<PieceRebind>* found, int64_t* references) const;
  Status RewriteConstants(std::vector<PieceRebind> found, const Addresses& to);

  // Wakes the manager this instance's method belongs to (first: taken from
  // the spec before s_ takes the rest).
  const std::function<void()> wake_manager_;
  InstanceState s_;
  Dispatcher dispatcher_{s_};
  HeldReplay held_;
  // The next call that takes the slower path runs the manager's hook
  // first: set at the start and by Sleep.
  bool call_hook_due_ = true;
  mutable std::mutex mu_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_RUNTIME_INTERNAL_METHOD_INSTANCE_H_
