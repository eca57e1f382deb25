// SPDX-License-Identifier: Apache-2.0
// BackgroundCaptures: a method instance's captures made in the background
// (capture=background), one per signature: queued for the manager's worker,
// being recorded there, or ready for its first launch by a call of that
// signature. The instance's mutex guards it; the worker takes that mutex
// only to pick a job up and to hand its result back, never while the body
// runs. What the Dispatcher decides from it is Decide's (capture_pending,
// capture_ready). No CUDA call here.
#ifndef ENCORE_GRAPH_RUNTIME_INTERNAL_BACKGROUND_CAPTURES_H_
#define ENCORE_GRAPH_RUNTIME_INTERNAL_BACKGROUND_CAPTURES_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "encore/core/internal/args.h"
#include "encore/core/internal/stream.h"
#include "encore/graph/body/internal/call_plan.h"
#include "encore/graph/capture/internal/capture_pipeline.h"
#include "encore/policy/internal/call_signature.h"

namespace encore {

// The call a background capture is made for: copies of its tensors (their
// shapes, strides and addresses, which the capture records as numbers and
// never reads through) and its plan over them.
struct JobCall {
  explicit JobCall(const CallPlan& plan);
  JobCall(const JobCall&) = delete;
  JobCall& operator=(const JobCall&) = delete;

  std::vector<TensorRef> inputs, outputs, graph_inputs, graph_outputs;
  CallPlan plan;
};

class BackgroundCaptures {
 public:
  enum class State { kQueued, kRecording, kReady };
  struct Job {
    uint64_t id = 0;  // the arena's capture id, taken when it was queued
    int64_t generation = 0;
    State state = State::kQueued;
    CallSignature signature;  // of the graph's tensors
    std::unique_ptr<JobCall> call;
    CaptureRequest request;   // request.plan is call->plan
    bool control_ready = false;
    std::unique_ptr<ReadyCapture> ready;  // kReady
  };

  // `reason`: why capture=background does not apply (empty: it does, or
  // it was not asked for), logged once by the owner.
  BackgroundCaptures(bool on, std::string reason) : on_(on), off_reason_(std::move(reason)) {}
  bool on() const { return on_; }
  const std::string& off_reason() const { return off_reason_; }
  // How a queued job reaches the worker (set by the instance).
  void set_submit(std::function<void(uint64_t id)> submit) { submit_ = std::move(submit); }

  // The job of the signature the call's graph tensors have, or null.
  Job* Find(Args graph_inputs, Args graph_outputs) const;
  Job* Get(uint64_t id);
  // Queues `job` with the current generation and hands it to the worker.
  void Queue(std::unique_ptr<Job> job);
  std::unique_ptr<Job> Take(uint64_t id);
  // Room for a new job among at most `cap`: the oldest ready job goes (its
  // capture returned, to abandon) when they are that many; false when every
  // one is queued or being recorded.
  bool MakeRoom(size_t cap, std::unique_ptr<ReadyCapture>* dropped);
  // Every queued and ready job goes (their captures returned, to abandon)
  // and the generation moves on, so a queued job the worker picks up later
  // finds itself stale; a job being recorded stays until the worker hands
  // it back (and then finds itself stale).
  std::vector<std::unique_ptr<ReadyCapture>> Abandon();
  // Only the queued jobs go (a sleep keeps the ready ones, whose memory
  // sleeps and wakes with the rest); their next calls queue them again.
  void AbandonQueued();
  bool stale(const Job& job) const { return job.generation != generation_; }

  bool empty() const { return jobs_.empty(); }
  size_t size() const { return jobs_.size(); }
  // The oldest job's signature (a refusal compares the call with it when
  // no graph is kept yet); jobs must not be empty.
  const CallSignature& front_signature() const { return jobs_.front()->signature; }
  // A job is being recorded; the worker marks it and notifies `changed`
  // when it hands the result back.
  bool recording() const { return recording_; }
  void set_recording(bool on) {
    recording_ = on;
    if (!on) changed.notify_all();
  }
  std::condition_variable changed;
  bool off_logged = false;  // off_reason was logged
  // Background captures in a row that CUDA invalidated from outside the
  // body (Note [What a background capture may coincide with]); graphs go
  // off at kMaxInterruptions.
  static constexpr int kMaxInterruptions = 3;
  int interruptions = 0;
  // The stream the worker records on, made by the first call that queues a
  // capture.
  Stream stream;

 private:
  const bool on_;
  const std::string off_reason_;
  std::function<void(uint64_t)> submit_;
  std::vector<std::unique_ptr<Job>> jobs_;  // oldest first
  int64_t generation_ = 0;
  bool recording_ = false;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_RUNTIME_INTERNAL_BACKGROUND_CAPTURES_H_
