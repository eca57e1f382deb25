#include "graph/method_instance.h"  // private to graph/

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/stream_capture.h"
#include "encore/graph/device_check_kernel.h"
#include "encore/graph/mapped_check_record.h"
#include "encore/core/scoped_thread_capture.h"

namespace encore {
namespace {

std::string Quoted(std::string_view name) { return "method '" + std::string(name) + "'"; }

double MicrosSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

const TensorRef& EmptyTensor() {
  static const TensorRef empty{};
  return empty;
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
  return method_->Check(*this, device_cond, message);
}

// A head staging node of one executable: its node handle (from the graph
// the executable was instantiated from) and the parameters the executable
// holds now, so a replay rewrites them only when an address moved.
struct MethodInstance::HeadNode {
  cudaGraphNode_t node = nullptr;
  cudaKernelNodeParams launch{};  // func, grid, block from the captured node
  StageParams params{};
  size_t first = 0;  // index of the first input (and output) this node stages
};

// One executable of a graph, staged for one set of caller addresses.
struct MethodInstance::Variant {
  GraphExec exec;
  std::shared_ptr<Graph> source;  // the graph `exec` was instantiated from
  std::vector<HeadNode> heads;
};

struct MethodInstance::GraphEntry {
  uint64_t id = 0;
  CallSignature signature;
  // The latest capture for this signature, and its head nodes with the
  // capture's parameters: the template new variants are instantiated from.
  std::shared_ptr<Graph> graph;
  std::vector<HeadNode> template_heads;
  std::vector<Variant> variants;  // most recently used first
  size_t nodes = 0;
  std::vector<TensorRef> static_inputs;
  std::vector<TensorRef> static_outputs;
  // Hashes of recent address sets that matched no variant: a set seen twice
  // earns its own executable.
  std::array<uint64_t, 16> missed{};
  size_t missed_next = 0;
};

MethodInstance::MethodInstance(std::string name, MethodFn fn, std::optional<std::vector<Constant>> constants,
                               MethodFlags flags, EventLog log, std::shared_ptr<RankConsensus> consensus, int device)
    : name_(std::move(name)),
      fn_(std::move(fn)),
      constants_(std::move(constants)),
      flags_(flags),
      log_(std::move(log)),
      consensus_(std::move(consensus)),
      device_(device),
      phase_(StartingPhase(flags)) {
  counters_.name = name_;
  if (!flags_.graphs) graphs_off_reason_ = kGraphsOffByFlags;
}

MethodInstance::~MethodInstance() {
  Status s = WaitForLastLaunch();
  if (!s.ok()) log_.Error("release_failed", {{"method", name_}, {"error", s.message()}});
  graphs_.clear();
  if (device_sequence_) (void)cuda().Free(device_sequence_);
}

Status MethodInstance::ValidateArgs(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(inputs[i], Quoted(name_) + ": input " + std::to_string(i)));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(ValidateTensorRef(outputs[i], Quoted(name_) + ": output " + std::to_string(i)));
  }
  return OkStatus();
}

Status MethodInstance::Run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(TakeCheckFailure());
  // Fast path first: a replay of the most recent graph validates nothing
  // twice, since a matching signature already implies valid tensors apart
  // from the data pointers.
  const bool graphs_on = flags_.graphs && !graphs_off_;
  if (graphs_on && !graphs_.empty() && graphs_.front()->signature.Matches(inputs, outputs)) {
    bool pointers_ok = true;
    for (const TensorRef& t : inputs) pointers_ok &= t.data != nullptr || t.numel() == 0;
    for (const TensorRef& t : outputs) pointers_ok &= t.data != nullptr || t.numel() == 0;
    if (pointers_ok) {
      int64_t index = ++counters_.calls;
      return Replay(*graphs_.front(), inputs, outputs, stream, index);
    }
  }
  // Before validation: every rank must cast this vote at its first call, even
  // one whose first call is rejected.
  if (consensus_ && !flags_compared_) CompareFlagsAcrossRanks();
  ENCORE_RETURN_IF_ERROR(ValidateArgs(inputs, outputs));

  size_t match = graphs_.size();
  for (size_t i = 0; i < graphs_.size(); ++i) {
    if (graphs_[i]->signature.Matches(inputs, outputs)) {
      match = i;
      break;
    }
  }
  DecisionInput in{&flags_, graphs_off_, warmups_done_, !graphs_.empty(), match < graphs_.size()};
  Action action = Decide(in);
  if (action == Action::kCapture || action == Action::kRecapture) {
    // A capture decision: host-memory constants veto it here, and with
    // several ranks every rank votes, so all capture or none do.
    std::string veto = constants_checked_ ? std::string() : CheckConstants();
    if (consensus_) veto = Vote(std::move(veto), "capture");
    if (!veto.empty()) {
      TurnGraphsOff(std::move(veto), counters_.calls);
      action = Action::kEager;
    }
  }
  if (action == Action::kRefuse) {
    // The most recent graph is the one the user most likely meant.
    Status s = graphs_.front()->signature.Compare(name_, inputs, outputs);
    ++counters_.refusals;
    log_.Info("refused", {{"method", name_}, {"reason", s.message()}});
    return s;
  }
  int64_t index = ++counters_.calls;
  switch (action) {
    case Action::kEager:
      ++counters_.eager_calls;
      return RunEager(inputs, outputs, stream, CallKind::kEager, index);
    case Action::kEagerOnce:
      ++counters_.eager_calls;
      log_.Debug("eager_new_shape", {{"method", name_}, {"call", index}});
      return RunEager(inputs, outputs, stream, CallKind::kEager, index);
    case Action::kWarmup: {
      ++counters_.warmup_calls;
      ++warmups_done_;
      Status s = RunEager(inputs, outputs, stream, CallKind::kWarmup, index);
      if (warmups_done_ >= flags_.warmup_calls) SetPhase(MethodPhase::kCapture, index);
      return s;
    }
    case Action::kCapture:
      return CaptureAndLaunch(inputs, outputs, stream, index, /*recapture=*/false);
    case Action::kRecapture:
      return CaptureAndLaunch(inputs, outputs, stream, index, /*recapture=*/true);
    case Action::kReplay: {
      // Move the match to the front: the vector is the LRU order.
      std::rotate(graphs_.begin(), graphs_.begin() + match, graphs_.begin() + match + 1);
      return Replay(*graphs_.front(), inputs, outputs, stream, index);
    }
    case Action::kRefuse:
      break;
  }
  return InternalError(Quoted(name_) + ": no action for this call");
}

Status MethodInstance::InvokeFn(Call& call) {
  // Nothing may throw past this point while a capture is open: an exception
  // would leave the stream capturing. Convert it to a Status instead.
  try {
    return fn_(call);
  } catch (const std::exception& e) {
    return InternalError(Quoted(name_) + " threw: " + e.what());
  } catch (...) {
    return InternalError(Quoted(name_) + " threw a non-standard exception");
  }
}

Status MethodInstance::RunEager(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream,
                        CallKind kind, int64_t index) {
  Call call(this, stream, inputs, outputs, kind, index);
  Status s = InvokeFn(call);
  Status freed = arena_.EndEagerCall(stream);
  if (s.ok()) s = freed;
  return s;
}

void MethodInstance::SetPhase(MethodPhase to, int64_t index) {
  if (to == phase_) return;
  log_.Info("phase", {{"method", name_}, {"from", MethodPhaseName(phase_)}, {"to", MethodPhaseName(to)},
                      {"call", index}});
  phase_ = to;
}

void MethodInstance::TurnGraphsOff(std::string reason, int64_t index) {
  graphs_off_ = true;
  graphs_off_reason_ = std::move(reason);
  log_.Info("graphs_off", {{"method", name_}, {"reason", graphs_off_reason_}, {"call", index}});
  SetPhase(MethodPhase::kEager, index);
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

void MethodInstance::CompareFlagsAcrossRanks() {
  flags_compared_ = true;
  const std::string mine = DecisionFlagsText(flags_);
  StatusOr<bool> same = consensus_->AllEqual(DecisionFlagsFingerprint(flags_), "flags of '" + name_ + "'");
  if (!same.ok()) {
    log_.Error("vote_failed", {{"method", name_}, {"what", "flags"}, {"error", same.status().message()}});
    TurnGraphsOff("the ranks could not compare the flags of '" + name_ + "': " + std::string(same.status().message()),
                  counters_.calls);
    return;
  }
  if (!*same) {
    log_.Warn("flags_differ", {{"method", name_}, {"rank", consensus_->rank()}, {"flags", mine}});
    TurnGraphsOff("the ranks run '" + name_ + "' with different flags (this rank: " + mine +
                      "); graphs are off on every rank so that their votes stay in step",
                  counters_.calls);
    return;
  }
  log_.Debug("flags_agreed", {{"method", name_}, {"rank", consensus_->rank()}, {"flags", mine}});
}

std::string MethodInstance::Vote(std::string veto, std::string_view what) {
  const std::string decision = std::string(what) + " of '" + name_ + "'";
  StatusOr<bool> agreed = consensus_->AllAgree(veto.empty(), decision);
  if (!agreed.ok()) {
    log_.Error("vote_failed", {{"method", name_}, {"what", what}, {"error", agreed.status().message()}});
    return veto.empty() ? "the ranks could not vote on the " + decision + ": " + std::string(agreed.status().message())
                        : veto;
  }
  log_.Info("vote", {{"method", name_}, {"what", what}, {"rank", consensus_->rank()}, {"vote", veto.empty()},
                     {"agreed", *agreed}});
  if (*agreed || !veto.empty()) return veto;
  return "another rank voted against the " + decision;
}

Status MethodInstance::WaitForLastLaunch() {
  if (!has_launched_ || !last_launch_event_) return OkStatus();
  ENCORE_CUDA_CALL(EventSynchronize, last_launch_event_.get());
  return OkStatus();
}

Status MethodInstance::JoinLastLaunch(cudaStream_t stream) {
  if (has_launched_ && stream != last_launch_stream_) {
    // The graphs of this method share static buffers and scratch, so a
    // launch on a new stream waits for the previous launch, whose last node
    // recorded last_launch_event_. (The previous stream itself may be gone.)
    ENCORE_CUDA_CALL(StreamWaitEvent, stream, last_launch_event_.get(), 0);
  }
  return OkStatus();
}

Status MethodInstance::LaunchGraph(const GraphExec& exec, cudaStream_t stream, int64_t index) {
  ENCORE_RETURN_IF_ERROR(JoinLastLaunch(stream));
  ENCORE_RETURN_IF_ERROR(exec.Launch(stream));
  launch_calls_[launches_ % kLaunchRing] = index;
  ++launches_;
  has_launched_ = true;
  last_launch_stream_ = stream;
  return OkStatus();
}

bool MethodInstance::VariantMatches(const Variant& v, std::span<const TensorRef> inputs,
                            std::span<const TensorRef> outputs) const {
  for (const HeadNode& h : v.heads) {
    for (int k = 0; k < h.params.count; ++k) {
      if (h.params.copies[k].src != inputs[h.first + k].data) return false;
    }
    for (int k = 0; k < h.params.publish_count; ++k) {
      if (h.params.publish[k] != outputs[h.first + k].data) return false;
    }
  }
  return true;
}

Status MethodInstance::Restage(Variant& v, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  for (HeadNode& h : v.heads) {
    bool changed = false;
    for (int k = 0; k < h.params.count; ++k) {
      const void* addr = inputs[h.first + k].data;
      changed |= h.params.copies[k].src != addr;
      h.params.copies[k].src = addr;
    }
    for (int k = 0; k < h.params.publish_count; ++k) {
      void* addr = outputs[h.first + k].data;
      changed |= h.params.publish[k] != addr;
      h.params.publish[k] = addr;
    }
    if (!changed) continue;
    void* args[] = {&h.params};
    cudaKernelNodeParams p = h.launch;
    p.kernelParams = args;
    p.extra = nullptr;
    cudaError_t err = cuda().GraphExecKernelNodeSetParams(v.exec.get(), h.node, &p);
    if (err != cudaSuccess) {
      // Forget the addresses so the next call rewrites this node again.
      for (int k = 0; k < h.params.count; ++k) h.params.copies[k].src = nullptr;
      for (int k = 0; k < h.params.publish_count; ++k) h.params.publish[k] = nullptr;
      return CudaStatus(err, CudaCallName(CudaCall::kGraphExecKernelNodeSetParams),
                        Quoted(name_) + ": staging addresses not updated, nothing launched");
    }
  }
  return OkStatus();
}

Status MethodInstance::Replay(GraphEntry& g, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                      cudaStream_t stream, int64_t index) {
  size_t vi = 0;
  while (vi < g.variants.size() && !VariantMatches(g.variants[vi], inputs, outputs)) ++vi;
  if (vi == g.variants.size()) {
    // No executable is staged for these addresses. Callers that cycle through
    // a few buffers (double buffering, a caching allocator) come back to the
    // same sets, so a set seen twice gets its own executable and later costs
    // no parameter rewrite at all; a set seen once reuses the least recently
    // used executable with one rewrite per head node.
    uint64_t key = 14695981039346656037ull;  // FNV-1a offset basis
    auto mix = [&key](const void* p) {
      key = (key ^ reinterpret_cast<uintptr_t>(p)) * 1099511628211ull;
    };
    for (const TensorRef& t : inputs) mix(t.data);
    for (const TensorRef& t : outputs) mix(t.data);
    bool recurring = std::find(g.missed.begin(), g.missed.end(), key) != g.missed.end();
    if (recurring && g.variants.size() < kMaxVariants) {
      StatusOr<GraphExec> exec = GraphExec::Instantiate(*g.graph);
      if (exec.ok()) {
        g.variants.push_back(Variant{*std::move(exec), g.graph, g.template_heads});
        ++counters_.exec_variants;
      } else {
        log_.Warn("variant_failed", {{"method", name_}, {"error", exec.status().message()}});
      }
    } else if (!recurring) {
      g.missed[g.missed_next++ % g.missed.size()] = key;
    }
    vi = g.variants.size() - 1;
    ENCORE_RETURN_IF_ERROR(Restage(g.variants[vi], inputs, outputs));
  }
  if (vi != 0) std::rotate(g.variants.begin(), g.variants.begin() + vi, g.variants.begin() + vi + 1);
  ENCORE_RETURN_IF_ERROR(LaunchGraph(g.variants.front().exec, stream, index));
  ++counters_.replays;
  if (log_.enabled(spdlog::level::trace)) log_.Log(spdlog::level::trace, "replay", {{"method", name_}, {"call", index}});
  return OkStatus();
}

Status MethodInstance::CaptureAndLaunch(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                                cudaStream_t stream, int64_t index, bool recapture) {
  const auto t0 = std::chrono::steady_clock::now();
  // Every failure before the first launch is this rank's "no" in the vote
  // the other ranks cast just before their first launch.
  auto fail = [&](CaptureStage stage, const Status& s, bool cuda_capture_error) {
    // Frees exactly what this capture allocated; nothing if it allocated
    // nothing or its arena capture never began.
    (void)arena_.AbortCapture();
    CaptureFailure f = ClassifyCaptureFailure(stage, s, cuda_capture_error, /*graph_launched=*/false);
    if (consensus_ && stage != CaptureStage::kFirstLaunch) (void)Vote(f.reason, "first launch");
    return HandleCaptureFailure(f, inputs, outputs, stream, index);
  };
  SetPhase(MethodPhase::kCapture, index);
  auto entry = std::make_unique<GraphEntry>();
  entry->id = ++next_capture_id_;
  entry->signature = CallSignature::Of(inputs, outputs);

  // Graph memory: static buffers plus the method's peak eager scratch, so the
  // capture itself rarely has to allocate.
  size_t static_bytes = 0;
  for (const TensorSignature& t : entry->signature.inputs()) static_bytes += t.span_bytes + GraphArena::kAlignment;
  for (const TensorSignature& t : entry->signature.outputs()) static_bytes += t.span_bytes + GraphArena::kAlignment;
  if (Status s = arena_.BeginCapture(entry->id, static_bytes + arena_.eager_peak_bytes()); !s.ok()) {
    return fail(CaptureStage::kBegin, s, false);
  }
  auto make_static = [&](std::span<const TensorRef> refs, std::vector<TensorRef>& out) -> Status {
    for (const TensorRef& t : refs) {
      TensorRef s = t;
      ENCORE_ASSIGN_OR_RETURN(s.data, arena_.AllocateCapture(t.span_bytes()));
      out.push_back(s);
    }
    return OkStatus();
  };
  if (Status s = make_static(inputs, entry->static_inputs); !s.ok()) {
    return fail(CaptureStage::kBegin, s, false);
  }
  if (Status s = make_static(outputs, entry->static_outputs); !s.ok()) {
    return fail(CaptureStage::kBegin, s, false);
  }
  // The table through which head nodes tell tail nodes where the caller's
  // outputs are this launch.
  void** out_table = nullptr;
  if (flags_.copy_outputs && !outputs.empty()) {
    StatusOr<void*> t = arena_.AllocateCapture(outputs.size() * sizeof(void*));
    if (!t.ok()) {
      return fail(CaptureStage::kBegin, t.status(), false);
    }
    out_table = static_cast<void**>(*t);
  }
  if (!last_launch_event_) {
    StatusOr<Event> e = Event::Create();
    if (!e.ok()) {
      return fail(CaptureStage::kBegin, e.status(), false);
    }
    last_launch_event_ = *std::move(e);
  }
  // Device-check state is host-pinned memory: make it before the capture,
  // where allocating it would invalidate the capture.
  if (flags_.checks == CheckMode::kRecord) {
    if (Status s = EnsureCheckState(); !s.ok()) {
      return fail(CaptureStage::kBegin, s, false);
    }
  }
  if (flags_.checks == CheckMode::kRecord && !device_sequence_) {
    void* p = nullptr;
    cudaError_t err = cuda().Malloc(&p, sizeof(unsigned long long));
    if (err == cudaSuccess) err = cuda().MemsetAsync(p, 0, sizeof(unsigned long long), stream);
    if (err != cudaSuccess) {
      if (p) (void)cuda().Free(p);
      return fail(CaptureStage::kBegin, CudaStatus(err, "device check sequence counter"), false);
    }
    device_sequence_ = static_cast<unsigned long long*>(p);
  }

  // The legacy default stream cannot be captured: capture on our own stream
  // and launch the graph on the caller's.
  cudaStream_t cs = stream;
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    if (!capture_stream_) {
      StatusOr<Stream> st = Stream::Create();
      if (!st.ok()) {
        return fail(CaptureStage::kBegin, st.status(), false);
      }
      capture_stream_ = *std::move(st);
    }
    cs = capture_stream_.get();
  }

  Status failure;
  CaptureStage failed_at = CaptureStage::kMethod;
  bool capture_error = false;
  std::optional<Graph> graph;
  {
    // Tells the readback shims this thread is capturing, so a read on a
    // stream other than the captured one refuses instead of breaking it.
    ScopedThreadCapture thread_capture;
    StatusOr<StreamCapture> cap = StreamCapture::Begin(cs);
    if (!cap.ok()) {
      return fail(CaptureStage::kBegin, cap.status(), false);
    }
    // Head nodes stage the inputs and publish the output addresses (always
    // at least one head, which also bumps the check sequence); the method
    // runs; tail nodes copy the outputs out.
    constexpr size_t kChunk = StageParams::kMaxCopies;
    const size_t n_in = inputs.size();
    const size_t n_out = flags_.copy_outputs ? outputs.size() : 0;
    auto add_heads = [&]() -> Status {
      size_t chunks = std::max<size_t>({1, (n_in + kChunk - 1) / kChunk, (n_out + kChunk - 1) / kChunk});
      for (size_t c = 0; c < chunks; ++c) {
        HeadNode h;
        h.first = c * kChunk;
        StageParams& p = h.params;
        p.count = static_cast<int>(std::min(kChunk, n_in - std::min(n_in, h.first)));
        p.publish_count = static_cast<int>(std::min(kChunk, n_out - std::min(n_out, h.first)));
        p.table = out_table;
        p.table_base = static_cast<int>(h.first);
        p.sequence = c == 0 ? device_sequence_ : nullptr;
        uint64_t max_bytes = 0;
        for (int k = 0; k < p.count; ++k) {
          const TensorRef& st = entry->static_inputs[h.first + k];
          p.copies[k] = StageCopy{inputs[h.first + k].data, st.data, st.span_bytes()};
          max_bytes = std::max<uint64_t>(max_bytes, p.copies[k].bytes);
        }
        for (int k = 0; k < p.publish_count; ++k) p.publish[k] = outputs[h.first + k].data;
        cudaError_t err = LaunchStage(p, max_bytes, cs);
        if (err != cudaSuccess) return CudaStatus(err, "staging kernel launch");
        ENCORE_ASSIGN_OR_RETURN(h.node, cap->LastNode());
        entry->template_heads.push_back(h);
      }
      return OkStatus();
    };
    auto add_tails = [&]() -> Status {
      for (size_t first = 0; first < n_out; first += kChunk) {
        StageParams p{};
        p.count = static_cast<int>(std::min(kChunk, n_out - first));
        p.table = out_table;
        p.table_base = static_cast<int>(first);
        p.is_tail = 1;
        uint64_t max_bytes = 0;
        for (int k = 0; k < p.count; ++k) {
          const TensorRef& st = entry->static_outputs[first + k];
          p.copies[k] = StageCopy{st.data, nullptr, st.span_bytes()};
          max_bytes = std::max<uint64_t>(max_bytes, p.copies[k].bytes);
        }
        cudaError_t err = LaunchStage(p, max_bytes, cs);
        if (err != cudaSuccess) return CudaStatus(err, "staging kernel launch");
      }
      return OkStatus();
    };
    failure = add_heads();
    if (failure.ok()) {
      Call call(this, cs, entry->static_inputs, entry->static_outputs, CallKind::kCapture, index);
      failure = InvokeFn(call);
      if (failure.ok()) failure = add_tails();
    }
    // The graph's last work, which the completion record node will follow.
    std::vector<cudaGraphNode_t> frontier;
    if (failure.ok()) {
      StatusOr<std::vector<cudaGraphNode_t>> f = cap->Frontier();
      if (f.ok()) {
        frontier = *std::move(f);
      } else {
        failure = f.status();
      }
    }
    if (!failure.ok()) {
      // A CUDA call the capture cannot record usually also invalidates it;
      // ending the capture says whether CUDA saw it that way.
      bool cap_err = false;
      StatusOr<Graph> g = cap->End(&cap_err);
      capture_error = cap_err;
    } else {
      failed_at = CaptureStage::kEndCapture;
      StatusOr<Graph> g = cap->End(&capture_error);
      if (g.ok()) {
        graph = *std::move(g);
        // Every launch records last_launch_event_ as its last node, so
        // Release and a launch on another stream can wait for it without an
        // API call per replay.
        cudaGraphNode_t record = nullptr;
        cudaError_t err = cuda().GraphAddEventRecordNode(&record, graph->get(), frontier.data(), frontier.size(),
                                                      last_launch_event_.get());
        if (err != cudaSuccess) failure = CudaStatus(err, "cudaGraphAddEventRecordNode");
      } else {
        failure = g.status();
      }
    }
  }
  if (!failure.ok()) {
    return fail(failed_at, failure, capture_error);
  }
  if (StatusOr<size_t> n = graph->NodeCount(); n.ok()) entry->nodes = *n;
  for (HeadNode& h : entry->template_heads) {
    cudaKernelNodeParams p{};
    if (cudaError_t err = cuda().GraphKernelNodeGetParams(h.node, &p); err != cudaSuccess) {
      return fail(CaptureStage::kEndCapture, CudaStatus(err, CudaCallName(CudaCall::kGraphKernelNodeGetParams)), false);
    }
    h.launch = p;
    h.launch.kernelParams = nullptr;
    h.launch.extra = nullptr;
  }
  entry->graph = std::make_shared<Graph>(*std::move(graph));

  // Under kRecapture with the cache full, update the least recently used
  // graph's executable in place when CUDA accepts it: cheaper than a new
  // instantiation.
  bool updated = false;
  if (recapture && static_cast<int>(graphs_.size()) >= flags_.max_graphs) {
    GraphEntry& lru = *graphs_.back();
    Variant& v = lru.variants.front();
    if (v.heads.size() == entry->template_heads.size() && v.exec.Update(*entry->graph).ok()) {
      updated = true;
      // The executable now runs the new graph, but parameter rewrites must
      // still name nodes of the graph it was instantiated from.
      Variant nv{std::move(v.exec), v.source, entry->template_heads};
      for (size_t i = 0; i < nv.heads.size(); ++i) nv.heads[i].node = v.heads[i].node;
      entry->variants.push_back(std::move(nv));
      arena_.DropGraph(lru.id);
      graphs_.pop_back();
    }
  }
  if (!updated) {
    StatusOr<GraphExec> exec = GraphExec::Instantiate(*entry->graph);
    if (!exec.ok()) {
      return fail(CaptureStage::kInstantiate, exec.status(), false);
    }
    ++counters_.instantiations;
    entry->variants.push_back(Variant{*std::move(exec), entry->graph, entry->template_heads});
  } else {
    ++counters_.updates_in_place;
  }

  if (consensus_) {
    if (std::string veto = Vote({}, "first launch"); !veto.empty()) {
      (void)arena_.AbortCapture();
      ++counters_.capture_failures;
      log_.Info("capture_failed", {{"method", name_}, {"call", index}, {"stage", "vote"}, {"reason", veto},
                                   {"expected", true}});
      TurnGraphsOff(veto, index);
      ++counters_.eager_calls;
      return RunEager(inputs, outputs, stream, CallKind::kEager, index);
    }
  }
  if (Status s = LaunchGraph(entry->variants.front().exec, stream, index); !s.ok()) {
    // cudaGraphLaunch returned an error, so nothing of the graph ran and the
    // eager retry cannot apply the call twice.
    return fail(CaptureStage::kFirstLaunch, s, false);
  }
  arena_.CommitCapture();
  if (recapture) {
    ++counters_.recaptures;
  } else {
    ++counters_.captures;
  }
  while (static_cast<int>(graphs_.size()) >= flags_.max_graphs) DropGraph(graphs_.size() - 1);
  const size_t nodes = entry->nodes;
  std::string sig = entry->signature.ToString();
  graphs_.insert(graphs_.begin(), std::move(entry));
  log_.Info(recapture ? "recaptured" : "captured",
            {{"method", name_}, {"call", index}, {"nodes", nodes}, {"signature", sig}, {"updated_in_place", updated},
             {"us", MicrosSince(t0)}});
  SetPhase(MethodPhase::kReplay, index);
  return OkStatus();
}

Status MethodInstance::HandleCaptureFailure(const CaptureFailure& f, std::span<const TensorRef> inputs,
                                    std::span<const TensorRef> outputs, cudaStream_t stream, int64_t index) {
  ++counters_.capture_failures;
  log_.Log(f.expected ? spdlog::level::info : spdlog::level::warn, "capture_failed",
           {{"method", name_}, {"call", index}, {"stage", CaptureStageName(f.stage)}, {"reason", f.status.message()},
            {"expected", f.expected}});
  TurnGraphsOff("capture failed at " + f.reason, index);
  if (!f.retry_eagerly) return f.status;
  ++counters_.eager_calls;
  Status s = RunEager(inputs, outputs, stream, CallKind::kEager, index);
  if (!s.ok()) {
    log_.Error("eager_failed", {{"method", name_}, {"call", index}, {"error", s.ToString()}});
  }
  return s;
}

void MethodInstance::DropGraph(size_t i) {
  arena_.DropGraph(graphs_[i]->id);
  graphs_.erase(graphs_.begin() + i);
}

Status MethodInstance::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_RETURN_IF_ERROR(WaitForLastLaunch());
  graphs_.clear();
  Status s = arena_.ReleaseAll();
  warmups_done_ = 0;
  constants_checked_ = false;
  has_launched_ = false;
  log_.Info("released", {{"method", name_}, {"call", counters_.calls}});
  if (!graphs_off_) SetPhase(StartingPhase(flags_), counters_.calls);
  return s;
}

Status MethodInstance::Release(std::vector<Constant> new_constants) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    constants_ = std::move(new_constants);
  }
  return Release();
}

Status MethodInstance::Synchronize(cudaStream_t stream) {
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  std::lock_guard<std::mutex> lock(mu_);
  return TakeCheckFailure();
}

StatusOr<void*> MethodInstance::Allocate(CallKind kind, cudaStream_t stream, size_t bytes) {
  if (kind == CallKind::kCapture) return arena_.AllocateCapture(bytes);
  return arena_.AllocateEager(bytes, stream);
}

Status MethodInstance::EnsureCheckState() {
  if (check_record_) return OkStatus();
  ENCORE_ASSIGN_OR_RETURN(auto rec, MappedCheckRecord::Create());
  check_record_ = std::make_unique<MappedCheckRecord>(std::move(rec));
  return OkStatus();
}

Status MethodInstance::Check(const Call& call, const bool* device_cond, std::string_view message) {
  if (flags_.checks == CheckMode::kOff) return OkStatus();
  if (device_cond == nullptr) return InvalidArgumentError(Quoted(name_) + ": Check got a null condition pointer");
  const bool trap = flags_.checks == CheckMode::kTrap;
  CheckRecord* rec = nullptr;
  if (!trap) {
    ENCORE_RETURN_IF_ERROR(EnsureCheckState());
    rec = check_record_->device();
  }
  // One id per distinct message, so an eager method that checks on every
  // call does not grow this list.
  auto it = std::find(check_messages_.begin(), check_messages_.end(), message);
  int id = static_cast<int>(it - check_messages_.begin());
  if (it == check_messages_.end()) check_messages_.emplace_back(message);
  const bool in_graph = call.kind() == CallKind::kCapture;
  cudaError_t err = LaunchDeviceCheck(device_cond, rec, id, in_graph ? device_sequence_ : nullptr,
                                             call.index(), trap, call.stream());
  if (err != cudaSuccess) return CudaStatus(err, "device check launch", Quoted(name_));
  return OkStatus();
}

Status MethodInstance::TakeCheckFailure() {
  if (!check_record_) return OkStatus();
  volatile CheckRecord* r = check_record_->host();
  if (!r->failed) return OkStatus();
  // The kernel claims the record before it writes the other fields; wait for
  // it to finish. This is the failure path only, never a replay.
  (void)cuda().DeviceSynchronize();
  int id = r->check_id;
  int64_t call = r->call_index;
  if (call < 0) {
    uint64_t seq = r->seq;
    // seq counts launches of this method's graphs, the failing one included.
    call = seq >= 1 && launches_ - seq < kLaunchRing ? launch_calls_[(seq - 1) % kLaunchRing] : -1;
  }
  std::string msg = id >= 0 && id < static_cast<int>(check_messages_.size()) ? check_messages_[id] : "unknown check";
  check_record_->Clear();
  ++counters_.check_failures;
  std::string text = Quoted(name_) + ": check failed: " + msg + " (call " +
                     (call >= 0 ? std::to_string(call) : std::string("unknown")) + ")";
  log_.Warn("check_failed", {{"method", name_}, {"message", msg}, {"call", call}});
  return FailedPreconditionError(text);
}

MethodReport MethodInstance::Report() const {
  std::lock_guard<std::mutex> lock(mu_);
  MethodReport r = counters_;
  r.phase = phase_;
  r.flags = flags_;
  r.graphs_off_reason = graphs_off_reason_;
  for (const auto& g : graphs_) {
    std::vector<Shape> shapes;
    for (const TensorSignature& t : g->signature.inputs()) shapes.push_back(t.shape);
    r.captured_input_shapes.push_back(std::move(shapes));
  }
  if (!graphs_.empty()) {
    r.graph_nodes = graphs_.front()->nodes;
    if (!flags_.copy_outputs) r.static_outputs = graphs_.front()->static_outputs;
  }
  r.memory = arena_.stats();
  return r;
}

}  // namespace encore
