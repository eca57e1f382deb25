// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/method.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/log.h"
#include "encore/graph/runtime/internal/method_instance.h"
#include "encore/graph/body/internal/constant_moves.h"
#include "encore/graph/body/internal/constant_set.h"
#include "encore/graph/runtime/internal/graphs_switch.h"
#include "encore/graph/body/internal/method_body.h"
#include "encore/core/internal/device_guard.h"
#include "encore/graph/internal/messages.h"
#include "encore/core/internal/retired_owners.h"

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


Method::Method(MethodSpec spec, MethodFlags flags, std::shared_ptr<const EventLog> log,
               std::function<void()> on_run, std::shared_ptr<RankConsensus> consensus,
               std::string graph_dump_dir, std::shared_ptr<MemoryBudget> budget, std::shared_ptr<CaptureWorker> worker)
    : name_(spec.name),
      stages_(MethodBody::Of(spec).stages()),
      flags_(flags),
      log_(std::move(log)),
      on_run_(std::move(on_run)),
      consensus_(std::move(consensus)),
      graph_dump_dir_(std::move(graph_dump_dir)),
      budget_(std::move(budget)),
      worker_(std::move(worker)),
      constants_(std::make_shared<ConstantSet>(std::move(spec.constants))) {}

namespace {

// An instance let go by its Method, destroyed on its device with its
// owners' lines on the method's logger (see RetiredOwners).
class RetiredInstance final : public Retired {
 public:
  RetiredInstance(std::unique_ptr<MethodInstance> instance, std::shared_ptr<const EventLog> log, std::string name)
      : Retired(instance->device()), instance_(std::move(instance)), log_(std::move(log)), name_(std::move(name)) {}
  ~RetiredInstance() override {
    // The instance's owners (streams, events, graphs, the arena) log a
    // failed destroy to the application's logger, not the default one.
    LogScope log_scope(log_.get(), name_);
    instance_.reset();
  }

 private:
  std::unique_ptr<MethodInstance> instance_;
  const std::shared_ptr<const EventLog> log_;
  const std::string name_;
};

}  // namespace

Method::~Method() {
  // Destroying an instance waits for its last launch and frees its memory,
  // which a stream capture in progress may forbid: see Note [Owners
  // destroyed inside a capture] (core/internal/retired_owners.h).
  for (auto& m : instances_) {
    // No capture body of this method may run once it is gone, also while
    // its instances are kept (a capture in sight: the worker's own one,
    // say).
    m->StopBackground();
    std::string_view why = RetiredOwners::Retire(std::make_unique<RetiredInstance>(std::move(m), log_, name_));
    if (!why.empty()) {
      log_->Info("release_deferred", {{"method", name_},
                                      {"reason", why},
                                      {"detail", "kept until an encore call made outside the capture"}});
    }
  }
}

StatusOr<MethodInstance*> Method::InstanceForCurrentDevice() {
  int device = 0;
  ENCORE_CUDA_CALL(GetDevice, &device);
  if (device < 0 || device >= kMaxDevices) {
    return OutOfRangeError(MethodQuoted(name_) + ": device " + std::to_string(device) + " is beyond the " +
                           std::to_string(kMaxDevices) + " devices encore supports");
  }
  if (MethodInstance* m = by_device_[device].load(std::memory_order_acquire)) return m;
  std::lock_guard<std::mutex> lock(mu_);
  if (MethodInstance* m = by_device_[device].load(std::memory_order_relaxed)) return m;
  instances_.push_back(std::make_unique<MethodInstance>(
      InstanceSpec{name_, MethodBody(stages_), constants_, flags_, *log_, consensus_, device, graph_dump_dir_, budget_,
                   worker_, on_run_}));
  MethodInstance* m = instances_.back().get();
  by_device_[device].store(m, std::memory_order_release);
  if (instances_.size() > 1) log_->Info("new_device", {{"method", name_}, {"device", device}});
  return m;
}

// Note [replay path] (graph/runtime/replay.cc): the first of its steps.
Status Method::Run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, cudaStream_t stream) {
  StatusOr<MethodInstance*> m = InstanceForCurrentDevice();
  if (!m.ok()) [[unlikely]] {
    // No instance runs the manager's hook for a call that reaches none (no
    // device): the call is the application's first run all the same, for
    // the hook's hints on the flags text's names.
    if (on_run_) on_run_();
    return m.status();
  }
  return (*m)->Run(inputs, outputs, stream);
}

Status Method::Precapture(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                          cudaStream_t stream) {
  RetiredOwners::Drain(stream);
  ENCORE_ASSIGN_OR_RETURN(MethodInstance * m, InstanceForCurrentDevice());
  return m->Precapture(inputs, outputs, stream);
}

size_t Method::CancelPendingCaptures() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (auto& m : instances_) n += m->CancelPendingCaptures();
  return n;
}

Status Method::Release() {
  RetiredOwners::Drain();
  std::lock_guard<std::mutex> lock(mu_);
  return ReleaseInstances();
}

Status Method::ReleaseInstances() {
  Status first;
  for (auto& m : instances_) {
    DeviceGuard guard(m->device());
    Status s = m->Release();
    if (first.ok()) first = s;
  }
  return first;
}

Status Method::Release(std::vector<Constant> new_constants) {
  ENCORE_RETURN_IF_ERROR(ValidateConstants(name_, new_constants));
  std::lock_guard<std::mutex> lock(mu_);
  constants_->Set(std::move(new_constants));
  return ReleaseInstances();
}

Status Method::RebindConstants(std::span<const Constant> constants) {
  std::lock_guard<std::mutex> lock(mu_);
  ENCORE_ASSIGN_OR_RETURN(ConstantRebind rebind, PlanConstantRebind(name_, *constants_->Get(), constants));
  constants_->Set(rebind.list);
  Status first;
  for (auto& m : instances_) {
    DeviceGuard guard(m->device());
    Status s = m->RebindConstants(rebind);
    if (first.ok()) first = s;
  }
  return first;
}

StatusOr<size_t> Method::SleepInstances() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (auto& m : instances_) {
    DeviceGuard guard(m->device());
    ENCORE_ASSIGN_OR_RETURN(const size_t given, m->Sleep());
    bytes += given;
  }
  return bytes;
}

Status Method::WakeInstances() {
  std::lock_guard<std::mutex> lock(mu_);
  Status first;
  for (auto& m : instances_) {
    DeviceGuard guard(m->device());
    Status s = m->Wake();
    if (first.ok()) first = s;
  }
  return first;
}

Status Method::Synchronize(cudaStream_t stream) {
  ENCORE_ASSIGN_OR_RETURN(MethodInstance * m, InstanceForCurrentDevice());
  return m->Synchronize(stream);
}

void Method::CountEagerCall(std::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = caller_eager_.find(reason);
  if (it == caller_eager_.end()) it = caller_eager_.emplace(std::string(reason), 0).first;
  ++it->second;
}

MethodReport Method::Report() const {
  std::lock_guard<std::mutex> lock(mu_);
  MethodReport r;
  if (instances_.empty()) {
    r.name = name_;
    r.flags = flags_;
    r.phase = StartingPhase(flags_);
    if (!flags_.graphs) r.graphs_off_reason = kGraphsOffByFlags;
    r.buckets = flags_.buckets;
  } else {
    r = instances_.front()->Report();
    for (size_t i = 1; i < instances_.size(); ++i) r.AddDevice(instances_[i]->Report());
  }
  for (const auto& [reason, n] : caller_eager_) {
    r.calls += n;
    r.eager_calls += n;
    r.eager_by_reason[reason] += n;
  }
  return r;
}

}  // namespace encore
