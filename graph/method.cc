#include "encore/graph/method.h"

#include <string>

#include "encore/core/cuda_api.h"
#include "graph/method_instance.h"  // private to graph/

namespace encore {

Status ValidateConstants(std::string_view method, const std::vector<Constant>& constants) {
  for (size_t i = 0; i < constants.size(); ++i) {
    if (constants[i].data == nullptr) {
      return InvalidArgumentError("method '" + std::string(method) + "': constant " + std::to_string(i) + " ('" +
                                  constants[i].name + "') has a null address");
    }
  }
  return OkStatus();
}

std::string_view CallKindName(CallKind k) {
  switch (k) {
    case CallKind::kEager: return "eager";
    case CallKind::kWarmup: return "warmup";
    case CallKind::kCapture: return "capture";
  }
  return "unknown";
}

std::string_view MethodPhaseName(MethodPhase p) {
  switch (p) {
    case MethodPhase::kWarmup: return "warmup";
    case MethodPhase::kCapture: return "capture";
    case MethodPhase::kReplay: return "replay";
    case MethodPhase::kEager: return "eager";
  }
  return "unknown";
}

Method::Method(std::string name, MethodFn fn, std::optional<std::vector<Constant>> constants, MethodFlags flags,
               EventLog log, std::function<void()> on_first_run, std::shared_ptr<RankConsensus> consensus)
    : name_(std::move(name)),
      fn_(std::move(fn)),
      flags_(flags),
      log_(std::move(log)),
      on_first_run_(std::move(on_first_run)),
      consensus_(std::move(consensus)),
      constants_(std::move(constants)) {}

namespace {

// Makes `device` current for a scope: releasing a device's graphs and memory
// runs with that device current, whatever the caller's is.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cuda().GetDevice(&previous_) == cudaSuccess && previous_ != device) {
      restore_ = cuda().SetDevice(device) == cudaSuccess;
    }
  }
  ~DeviceGuard() {
    if (restore_) (void)cuda().SetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool restore_ = false;
};

}  // namespace

Method::~Method() {
  for (auto& m : instances_) {
    DeviceGuard guard(m->device());
    m.reset();
  }
}

StatusOr<MethodInstance*> Method::InstanceForCurrentDevice() {
  int device = 0;
  ENCORE_CUDA_CALL(GetDevice, &device);
  if (device < 0 || device >= kMaxDevices) {
    return OutOfRangeError("method '" + name_ + "': device " + std::to_string(device) + " is beyond the " +
                           std::to_string(kMaxDevices) + " devices encore supports");
  }
  if (MethodInstance* m = by_device_[device].load(std::memory_order_acquire)) return m;
  std::lock_guard<std::mutex> lock(mu_);
  if (MethodInstance* m = by_device_[device].load(std::memory_order_relaxed)) return m;
  instances_.push_back(std::make_unique<MethodInstance>(name_, fn_, constants_, flags_, log_, consensus_, device));
  MethodInstance* m = instances_.back().get();
  by_device_[device].store(m, std::memory_order_release);
  if (instances_.size() > 1) log_.Info("new_device", {{"method", name_}, {"device", device}});
  return m;
}

Status Method::Run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream) {
  // Racing first calls may both run the hook; it is idempotent (the
  // Manager's runs under call_once). Not under mu_: the hook takes the
  // Manager's lock, which Report callers take before mu_.
  if (!first_run_done_.load(std::memory_order_relaxed)) {
    if (on_first_run_) on_first_run_();
    first_run_done_.store(true, std::memory_order_relaxed);
  }
  ENCORE_ASSIGN_OR_RETURN(MethodInstance * m, InstanceForCurrentDevice());
  return m->Run(inputs, outputs, stream);
}

Status Method::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  return ReleaseInstances(nullptr);
}

Status Method::ReleaseInstances(const std::vector<Constant>* new_constants) {
  Status first;
  for (auto& m : instances_) {
    DeviceGuard guard(m->device());
    Status s = new_constants ? m->Release(*new_constants) : m->Release();
    if (first.ok()) first = s;
  }
  return first;
}

Status Method::Release(std::vector<Constant> new_constants) {
  ENCORE_RETURN_IF_ERROR(ValidateConstants(name_, new_constants));
  std::lock_guard<std::mutex> lock(mu_);
  constants_ = new_constants;
  return ReleaseInstances(&new_constants);
}

Status Method::Synchronize(cudaStream_t stream) {
  ENCORE_ASSIGN_OR_RETURN(MethodInstance * m, InstanceForCurrentDevice());
  return m->Synchronize(stream);
}

MethodReport Method::Report() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (instances_.empty()) {
    MethodReport r;
    r.name = name_;
    r.flags = flags_;
    r.phase = StartingPhase(flags_);
    if (!flags_.graphs) r.graphs_off_reason = kGraphsOffByFlags;
    return r;
  }
  MethodReport r = instances_.front()->Report();
  for (size_t i = 1; i < instances_.size(); ++i) {
    MethodReport o = instances_[i]->Report();
    r.calls += o.calls;
    r.warmup_calls += o.warmup_calls;
    r.captures += o.captures;
    r.replays += o.replays;
    r.eager_calls += o.eager_calls;
    r.refusals += o.refusals;
    r.recaptures += o.recaptures;
    r.capture_failures += o.capture_failures;
    r.instantiations += o.instantiations;
    r.updates_in_place += o.updates_in_place;
    r.exec_variants += o.exec_variants;
    r.check_failures += o.check_failures;
    r.memory.reserved_bytes += o.memory.reserved_bytes;
    r.memory.live_bytes += o.memory.live_bytes;
    r.memory.peak_bytes += o.memory.peak_bytes;
    if (r.graphs_off_reason.empty()) r.graphs_off_reason = o.graphs_off_reason;
  }
  r.devices = static_cast<int>(instances_.size());
  return r;
}

std::string MethodReport::ToJson() const {
  std::string j = "{";
  auto str = [&](const char* k, std::string_view v) {
    j += "\"";
    j += k;
    j += "\":\"" + JsonEscape(v) + "\",";
  };
  auto num = [&](const char* k, auto v) {
    j += "\"";
    j += k;
    j += "\":" + std::to_string(v) + ",";
  };
  str("name", name);
  str("phase", MethodPhaseName(phase));
  j += "\"flags\":{\"graphs\":" + std::string(flags.graphs ? "true" : "false") +
       ",\"warmup_calls\":" + std::to_string(flags.warmup_calls) + ",\"on_new_shape\":\"" +
       std::string(ShapePolicyName(flags.on_new_shape)) + "\",\"max_graphs\":" + std::to_string(flags.max_graphs) +
       ",\"checks\":\"" + std::string(CheckModeName(flags.checks)) + "\",\"copy_outputs\":" +
       (flags.copy_outputs ? "true" : "false") + "},";
  num("calls", calls);
  num("warmup_calls", warmup_calls);
  num("captures", captures);
  num("replays", replays);
  num("eager_calls", eager_calls);
  num("refusals", refusals);
  num("recaptures", recaptures);
  num("capture_failures", capture_failures);
  num("instantiations", instantiations);
  num("updates_in_place", updates_in_place);
  num("exec_variants", exec_variants);
  num("check_failures", check_failures);
  if (graphs_off_reason.empty()) {
    j += "\"graphs_off_reason\":null,";
  } else {
    str("graphs_off_reason", graphs_off_reason);
  }
  j += "\"captured_input_shapes\":[";
  for (size_t g = 0; g < captured_input_shapes.size(); ++g) {
    if (g) j += ',';
    j += '[';
    for (size_t i = 0; i < captured_input_shapes[g].size(); ++i) {
      if (i) j += ',';
      j += '[';
      const Shape& s = captured_input_shapes[g][i];
      for (int d = 0; d < s.size(); ++d) j += (d ? "," : "") + std::to_string(s[d]);
      j += ']';
    }
    j += ']';
  }
  j += "],";
  num("graph_nodes", graph_nodes);
  j += "\"memory\":{\"reserved_bytes\":" + std::to_string(memory.reserved_bytes) +
       ",\"live_bytes\":" + std::to_string(memory.live_bytes) + ",\"peak_bytes\":" + std::to_string(memory.peak_bytes) +
       "}}";
  return j;
}

}  // namespace encore
