// SPDX-License-Identifier: Apache-2.0
#include "graph/method_instance.h"  // private to graph/

#include <exception>
#include <string>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "graph/messages.h"  // private to graph/

namespace encore {
namespace {

std::string Quoted(std::string_view name) { return "method '" + std::string(name) + "'"; }

const TensorRef& EmptyTensor() {
  static const TensorRef empty{};
  return empty;
}

// The instances whose body this thread is running (innermost last), so a
// body that calls back into its own method gets an error, not a deadlock.
thread_local const MethodInstance* t_running_body = nullptr;

bool PointersOk(std::span<const TensorRef> tensors) {
  bool ok = true;
  for (const TensorRef& t : tensors) ok &= t.data != nullptr || t.numel() == 0;
  return ok;
}

}  // namespace

MethodPhase StartingPhase(const MethodFlags& flags) {
  if (!flags.graphs) return MethodPhase::kEager;
  return flags.warmup_calls > 0 ? MethodPhase::kWarmup : MethodPhase::kCapture;
}

const TensorRef& Call::input(size_t i) const { return i < inputs_.size() ? inputs_[i] : EmptyTensor(); }
const TensorRef& Call::output(size_t i) const { return i < outputs_.size() ? outputs_[i] : EmptyTensor(); }

StatusOr<void*> Call::Allocate(size_t bytes) { return method_->Allocate(kind_, stream_, bytes); }

Status Call::Check(const bool* device_cond, std::string_view message) {
  return method_->checks_.Check(device_cond, message, kind_ == CallKind::kCapture, index_, stream_);
}

MethodInstance::MethodInstance(std::string name, MethodFn fn, std::optional<std::vector<Constant>> constants,
                               MethodFlags flags, EventLog log, std::shared_ptr<RankConsensus> consensus, int device,
                               std::string graph_dump_dir, std::shared_ptr<MemoryBudget> budget)
    : name_(std::move(name)),
      fn_(std::move(fn)),
      constants_(std::move(constants)),
      flags_(flags),
      log_(std::move(log)),
      device_(device),
      graph_dump_dir_(std::move(graph_dump_dir)),
      phase_(StartingPhase(flags)),
      votes_(&name_, std::move(consensus), &log_),
      budget_(std::move(budget)) {
  counters_.name = name_;
  if (!flags_.graphs) graphs_off_reason_ = kGraphsOffByFlags;
}

MethodInstance::~MethodInstance() {
  Status s = WaitForLastLaunch();
  if (!s.ok()) log_.Error("release_failed", {{"method", name_}, {"error", s.message()}});
  if (int64_t n = refusal_log_limit_.TakePending(); n > 0) log_.Info("refused_not_logged", {{"method", name_}, {"count", n}});
  cache_.Clear();
  // The arena frees its slabs after this body; the manager's count of them
  // goes now.
  if (budget_) budget_->Adjust(-static_cast<int64_t>(budget_counted_));
}

Status MethodInstance::RejectReentry(std::string_view what) const {
  if (t_running_body != this) return OkStatus();
  return FailedPreconditionError(Quoted(name_) + ": " + std::string(what) +
                                 " was called from inside the method's own body; a method cannot call itself");
}

Status MethodInstance::ValidateArgs(Args inputs, Args outputs) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(inputs[i], Quoted(name_) + ": input " + std::to_string(i)));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(outputs[i], Quoted(name_) + ": output " + std::to_string(i)));
  }
  return OkStatus();
}

bool MethodInstance::CanReplayFront(Args inputs, Args outputs) const {
  // A matching signature already implies valid tensors apart from the data
  // pointers, so the fast path validates nothing twice.
  return flags_.graphs && !graphs_off_ && !cache_.empty() && cache_.front().signature.Matches(inputs, outputs) &&
         PointersOk(inputs) && PointersOk(outputs);
}

Status MethodInstance::Run(Args inputs, Args outputs, cudaStream_t stream) {
  LogScope log_scope(&log_, name_);  // owners destroyed in this call log to the application's logger
  ENCORE_RETURN_IF_ERROR(RejectReentry("Run"));
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(checks_.TakeFailure());
  if (pad_) return DispatchPadded(inputs, outputs, stream);
  if (CanReplayFront(inputs, outputs)) {
    const int64_t index = ++counters_.calls;
    return Replay(cache_.front(), inputs, outputs, stream, index);
  }
  return Dispatch(inputs, outputs, stream);
}

Status MethodInstance::Dispatch(Args inputs, Args outputs, cudaStream_t stream) {
  // Before validation: every rank must cast this vote at its first call,
  // even one whose first call is rejected.
  if (votes_.several_ranks() && !votes_.flags_compared()) {
    if (std::string why = votes_.CompareFlags(flags_); !why.empty()) TurnGraphsOff(std::move(why), counters_.calls);
  }
  // After a failed vote the ranks are out of step: the body's collectives
  // would never pair, so no call runs it.
  ENCORE_RETURN_IF_ERROR(votes_.failure());
  ENCORE_RETURN_IF_ERROR(ValidateArgs(inputs, outputs));
  const size_t match = cache_.Find(inputs, outputs);
  const Action action =
      VetoCapture(Decide(DecisionInput{&flags_, graphs_off_, warmups_done_, !cache_.empty(), match < cache_.size()}));
  ENCORE_RETURN_IF_ERROR(votes_.failure());
  if (action == Action::kRefuse) return Refuse(inputs, outputs);
  const int64_t index = ++counters_.calls;
  switch (action) {
    case Action::kEagerOnce:
      log_.Debug("eager_new_shape", {{"method", name_}, {"call", index}});
      [[fallthrough]];
    case Action::kEager: {
      NvtxScope range(nvtx_, NvtxRange::kEager);
      ++counters_.eager_calls;
      return RunEager(inputs, outputs, stream, CallKind::kEager, index);
    }
    case Action::kWarmup:
      return RunWarmup(inputs, outputs, stream, index);
    case Action::kCapture:
    case Action::kRecapture:
      return CaptureWithinBudget(inputs, outputs, stream, index, action == Action::kRecapture);
    case Action::kReplay:
      return Replay(cache_.Touch(match), inputs, outputs, stream, index);
    case Action::kRefuse:
      break;
  }
  return InternalError(Quoted(name_) + ": no action for this call");
}

Action MethodInstance::VetoCapture(Action action) {
  if (action != Action::kCapture && action != Action::kRecapture) return action;
  // Host-memory constants veto a capture here, and with several ranks every
  // rank votes, so all capture or none do.
  std::string veto = constants_checked_ ? std::string() : CheckConstants();
  veto = votes_.Vote(std::move(veto), "capture");
  if (veto.empty()) return action;
  TurnGraphsOff(std::move(veto), counters_.calls);
  return Action::kEager;
}

Status MethodInstance::Refuse(Args inputs, Args outputs) {
  // The most recent graph is the one the user most likely meant.
  Status guard = cache_.front().signature.Compare(name_, inputs, outputs);
  Status s(guard.code(), std::string(guard.message()) + RefusalRemedy(name_));
  ++counters_.refusals;
  // A server refusing every call must not log every call: the first line,
  // then one a second with the count of those not logged.
  if (RateLimiter::Decision d = refusal_log_limit_.Admit(RateLimiter::Clock::now()); d.log) {
    log_.Info("refused", {{"method", name_}, {"reason", s.message()}, {"suppressed", d.suppressed}});
  }
  return s;
}

Status MethodInstance::RunWarmup(Args inputs, Args outputs, cudaStream_t stream, int64_t index) {
  NvtxScope range(nvtx_, NvtxRange::kWarmup);
  ++counters_.warmup_calls;
  ++warmups_done_;
  Status s = RunEager(inputs, outputs, stream, CallKind::kWarmup, index);
  if (warmups_done_ >= flags_.warmup_calls) SetPhase(MethodPhase::kCapture, index);
  return s;
}

Status MethodInstance::InvokeFn(Call& call) {
  const MethodInstance* outer = t_running_body;
  t_running_body = this;
  Status s;
  // Nothing may throw past this point while a capture is open: an exception
  // would leave the stream capturing. Convert it to a Status instead.
  try {
    s = fn_(call);
  } catch (const std::exception& e) {
    s = InternalError(Quoted(name_) + " threw: " + e.what());
  } catch (...) {
    s = InternalError(Quoted(name_) + " threw a non-standard exception");
  }
  t_running_body = outer;
  return s;
}

Status MethodInstance::RunEager(Args inputs, Args outputs, cudaStream_t stream, CallKind kind, int64_t index) {
  // The eager fallback after a failed first-launch vote lands here.
  ENCORE_RETURN_IF_ERROR(votes_.failure());
  Call call(this, stream, inputs, outputs, kind, index);
  Status s = InvokeFn(call);
  Status freed = NameMethod(name_, arena_.EndEagerCall(stream));
  if (s.ok()) s = freed;
  return s;
}

void MethodInstance::SetPhase(MethodPhase to, int64_t index) {
  if (to == phase_) return;
  const MethodPhase from = phase_;
  // Set before logging: a logger that fails must not leave the phase behind.
  phase_ = to;
  log_.Info("phase", {{"method", name_}, {"from", MethodPhaseName(from)}, {"to", MethodPhaseName(to)},
                      {"call", index}});
}

void MethodInstance::TurnGraphsOff(std::string reason, int64_t index) {
  graphs_off_ = true;
  graphs_off_reason_ = std::move(reason);
  SetPhase(MethodPhase::kEager, index);
  log_.Info("graphs_off", {{"method", name_}, {"reason", graphs_off_reason_}, {"call", index}});
}

std::string MethodInstance::CheckConstants() {
  constants_checked_ = true;
  if (!constants_) {
    log_.Info("constants_unlisted",
              {{"method", name_},
               {"detail", "the constants could not be listed; host-memory constants cannot be detected"}});
    return {};
  }
  for (const Constant& c : *constants_) {
    cudaPointerAttributes attr{};
    cudaError_t err = cuda().PointerGetAttributes(&attr, c.data);
    if (err != cudaSuccess) {
      (void)cuda().GetLastError();
      log_.Warn("constant_unknown", {{"method", name_}, {"constant", c.name}, {"error", cudaGetErrorName(err)}});
      continue;
    }
    const char* where = nullptr;
    if (attr.type == cudaMemoryTypeHost) where = "pinned host memory";
    if (attr.type == cudaMemoryTypeUnregistered) where = "pageable host memory";
    if (where) {
      log_.Info("host_constant", {{"method", name_}, {"constant", c.name}, {"memory", where}});
      return "constant '" + c.name + "' is in " + where + "; host code that reads it would be baked into a graph";
    }
  }
  return {};
}

Status MethodInstance::WaitForLastLaunch() {
  if (!has_launched_) return OkStatus();
  if (!last_launch_recorded_) return LastLaunchUnknown();
  ENCORE_CUDA_CALL(EventSynchronize, last_launch_event_.get());
  return OkStatus();
}

Status MethodInstance::JoinLastLaunch(cudaStream_t stream) {
  if (!has_launched_ || stream == last_launch_stream_) return OkStatus();
  // The graphs of this method share static buffers and scratch, so work on
  // a new stream waits for the previous launch. The previous stream itself
  // may be gone, so the wait is on the event recorded after that launch
  // (never a device-wide sync: CUDA refuses one, and invalidates the
  // capture, while any thread captures any stream).
  if (!last_launch_recorded_) return LastLaunchUnknown();
  ENCORE_CUDA_CALL(StreamWaitEvent, stream, last_launch_event_.get(), 0);
  last_launch_stream_ = stream;  // this stream's work now follows the launch
  return OkStatus();
}

Status MethodInstance::LastLaunchUnknown() const {
  return InternalError(Quoted(name_) + ": the completion of the last launch was not recorded (cudaEventRecord "
                                       "and cudaStreamSynchronize failed after it); nothing launched");
}

Status MethodInstance::LaunchGraph(const GraphExec& exec, cudaStream_t stream, int64_t index, bool bumps_sequence) {
  ENCORE_RETURN_IF_ERROR(JoinLastLaunch(stream));
  ENCORE_RETURN_IF_ERROR(exec.Launch(stream));
  if (pad_) pad_rows_.Launched();
  if (bumps_sequence) checks_.RecordLaunch(index);
  has_launched_ = true;
  last_launch_stream_ = stream;
  last_launch_recorded_ = true;  // by the graph's own record node
  return OkStatus();
}

void MethodInstance::RecordLastWork(cudaStream_t stream) {
  if (!has_launched_ || !last_launch_event_) return;
  last_launch_stream_ = stream;
  last_launch_recorded_ = cuda().EventRecord(last_launch_event_.get(), stream) == cudaSuccess;
  if (last_launch_recorded_) return;
  (void)cuda().GetLastError();
  // The launch happened and its result stands. Without the event a later
  // wait would have nothing to wait on: wait now, while the stream exists.
  if (cuda().StreamSynchronize(stream) == cudaSuccess) {
    has_launched_ = false;  // nothing of this method is in flight
  } else {
    (void)cuda().GetLastError();
  }
}

Status MethodInstance::Replay(GraphEntry& g, Args inputs, Args outputs, cudaStream_t stream, int64_t index) {
  NvtxScope range(nvtx_, NvtxRange::kReplay);  // one load and a branch without a profiler
  if (g.auto_rejudge) RejudgeAutoBinding(g, index);
  ENCORE_ASSIGN_OR_RETURN(BoundExec bound, cache_.Bind(g, inputs, outputs, &counters_.exec_variants));
  // Two integer tests on an unverified replay; no CUDA call.
  const bool verify = (flags_.verify | flags_.verify_every) != 0 &&
                      VerifiesLaunch(flags_, g.launches + 1, counters_.replays + 1);
  std::optional<VerifiedLaunch> v;
  if (verify) {
    // The snapshots are taken on this stream: after the last launch, wherever it ran.
    ENCORE_RETURN_IF_ERROR(JoinLastLaunch(stream));
    v = BeginVerify(g, inputs, GraphOutputs(g, outputs), stream, index);
  }
  ENCORE_RETURN_IF_ERROR(LaunchGraph(*bound.exec, stream, index, bound.bumps_sequence));
  ++g.launches;
  ++counters_.replays;
  if (log_.enabled(spdlog::level::trace)) log_.Log(spdlog::level::trace, "replay", {{"method", name_}, {"call", index}});
  if (verify) return FinishVerify(v ? &*v : nullptr, GraphOutputs(g, outputs), stream, index);
  return OkStatus();
}

Status MethodInstance::Release() {
  LogScope log_scope(&log_, name_);
  ENCORE_RETURN_IF_ERROR(RejectReentry("Release"));
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(WaitForLastLaunch());
  cache_.Clear();
  Status s = arena_.ReleaseAll();
  SettleGraphMemory();
  warmups_done_ = 0;
  constants_checked_ = false;
  has_launched_ = false;
  log_.Info("released", {{"method", name_}, {"call", counters_.calls}});
  if (!graphs_off_) SetPhase(StartingPhase(flags_), counters_.calls);
  return s;
}

Status MethodInstance::Release(std::vector<Constant> new_constants) {
  ENCORE_RETURN_IF_ERROR(RejectReentry("Release"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    constants_ = std::move(new_constants);
  }
  return Release();
}

Status MethodInstance::Synchronize(cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(RejectReentry("Synchronize"));
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  std::lock_guard<std::mutex> lock(mu_);
  return checks_.TakeFailure();
}

StatusOr<void*> MethodInstance::Allocate(CallKind kind, cudaStream_t stream, size_t bytes) {
  StatusOr<void*> p = kind == CallKind::kCapture ? arena_.AllocateCapture(bytes) : arena_.AllocateEager(bytes, stream);
  if (!p.ok()) return NameMethod(name_, p.status());
  return p;
}

MethodReport MethodInstance::Report() const {
  // From inside its own body this thread already holds mu_.
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (t_running_body != this) lock.lock();
  MethodReport r = counters_;
  r.phase = phase_;
  r.flags = flags_;
  r.graphs_off_reason = graphs_off_reason_;
  r.check_failures = checks_.failures();
  for (const auto& g : cache_.entries()) {
    std::vector<Shape> shapes;
    for (const TensorSignature& t : g->signature.inputs()) shapes.push_back(t.shape);
    r.captured_input_shapes.push_back(std::move(shapes));
  }
  if (!cache_.empty()) {
    r.graph_nodes = cache_.front().direct ? cache_.front().direct->nodes() : cache_.front().nodes;
    r.binding = cache_.front().binding.binding;
    r.binding_reason = cache_.front().binding.reason;
    r.rebind_sites = cache_.front().rebind_sites;
    if (!flags_.copy_outputs) r.static_outputs = cache_.front().static_outputs;
  }
  r.memory = arena_.stats();
  r.graph_memory_bytes = r.memory.reserved_bytes;
  r.buckets = buckets_;
  return r;
}

}  // namespace encore
