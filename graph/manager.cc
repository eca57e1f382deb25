// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/manager.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "encore/allocator/internal/memory_budget.h"
#include "encore/core/internal/log.h"
#include "encore/core/internal/retired_owners.h"
#include "encore/policy/internal/flag_table.h"
#include "encore/policy/internal/flags_text.h"
#include "encore/version.h"
#include "encore/graph/body/internal/body_runner.h"
#include "encore/graph/capture/internal/graph_dump.h"
#include "encore/core/internal/capture_worker.h"

namespace encore {

StatusOr<std::unique_ptr<Manager>> Manager::Create(ManagerOptions options) {
  RetiredOwners::Drain();  // owners of managers destroyed inside a capture, if it is over
  ENCORE_RETURN_IF_ERROR(ValidateMethodFlags(options.defaults, "ManagerOptions.defaults"));
  std::string text = options.flags_text;
  std::string source = "flags_text";
  if (text.empty()) {
    if (const char* env = std::getenv("ENCORE_METHOD_FLAGS")) {
      text = env;
      source = "ENCORE_METHOD_FLAGS";
    }
  }
  StatusOr<FlagsText> parsed = FlagsText::Parse(text);
  if (!parsed.ok()) {
    return InvalidArgumentError(source + ": " + std::string(parsed.status().message()));
  }
  if (options.graph_dump_dir.empty()) options.graph_dump_dir = GraphDumpDirFromEnv();
  return std::unique_ptr<Manager>(
      new Manager(std::move(options), std::make_unique<const FlagsText>(*std::move(parsed))));
}

Manager::Manager(ManagerOptions options, std::unique_ptr<const FlagsText> text)
    : options_(std::move(options)), flags_text_(std::move(text)),
      log_(std::make_shared<const EventLog>(options_.logger, options_.log_format)),
      budget_(std::make_shared<MemoryBudget>(options_.graph_memory_budget)),
      worker_(std::make_shared<CaptureWorker>()) {}

Manager::~Manager() {
  // The methods go after this body, each waiting for its own background
  // captures and keeping its instances while a capture is in sight (Note
  // [Owners destroyed inside a capture]); then the worker: methods_ is
  // declared after worker_, so the order holds.
  RetiredOwners::Drain();
  // Registration is over only now; see Register.
  for (const std::string& n : UnregisteredFlagNames()) {
    log_->Warn("unknown_method_in_flags", {{"method", n}, {"detail", "no method with this name was registered"}});
  }
}

StatusOr<Method*> Manager::Register(MethodSpec spec) {
  RetiredOwners::Drain();
  if (spec.name.empty()) return InvalidArgumentError("Register: the method name is empty");
  ENCORE_RETURN_IF_ERROR(ValidateMethodBody(spec));
  if (spec.constants) {
    if (Status s = ValidateConstants(spec.name, *spec.constants); !s.ok()) {
      return InvalidArgumentError("Register: " + std::string(s.message()));
    }
  }
  MethodFlags flags = flags_text_->Resolve(spec.name, spec.flags.value_or(options_.defaults));
  ENCORE_RETURN_IF_ERROR(ValidateMethodFlags(flags, "Register: method '" + spec.name + "'"));

  std::unique_lock<std::shared_mutex> lock(mu_);
  if (methods_.count(spec.name)) {
    return AlreadyExistsError("Register: a method named '" + spec.name + "' is already registered");
  }
  auto on_run = [this, name = spec.name] { OnRun(name); };
  auto method = std::unique_ptr<Method>(new Method(std::move(spec), flags, log_, std::move(on_run), options_.consensus,
                                                   options_.graph_dump_dir, budget_, worker_));
  Method* raw = method.get();
  methods_.emplace(raw->name(), std::move(method));
  log_->Info("registered", {{"method", raw->name()},
                           {"graphs", flags.graphs},
                           {"warmup", flags.warmup_calls},
                           {"on_new_shape", ShapePolicyName(flags.on_new_shape)},
                           {"max_graphs", flags.max_graphs},
                           {"buckets", BucketsText(flags.buckets)},
                           {"max_padding", flags.max_padding},
                           {"capture", CaptureModeName(flags.capture_mode)},
                           {"checks", CheckModeName(flags.checks)},
                           {"copy_outputs", flags.copy_outputs}});
  return raw;
}

Method* Manager::Find(std::string_view name) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = methods_.find(name);
  return it == methods_.end() ? nullptr : it->second.get();
}

std::vector<std::string> Manager::UnregisteredFlagNames() const {
  std::vector<std::string> known;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (const auto& [name, m] : methods_) known.push_back(name);
  }
  return flags_text_->UnknownMethods(known);
}

void Manager::NoteUnregisteredFlagNames() {
  // Info, not a warning: the application may yet register these names.
  std::call_once(warned_unknown_, [this] {
    for (const std::string& n : UnregisteredFlagNames()) {
      log_->Info("flags_method_not_registered",
                {{"method", n}, {"detail", "no method with this name is registered yet; warned at the Manager's end if none is"}});
    }
  });
}

Status Manager::WaitForCaptures() {
  if (worker_->OnWorkerThread() || internal::t_running_body != nullptr) {
    return FailedPreconditionError(
        "WaitForCaptures was called from inside a method's body; the captures it would wait for may need that "
        "method");
  }
  worker_->WaitAll();
  return OkStatus();
}

size_t Manager::CancelPendingCaptures() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [name, m] : methods_) n += m->CancelPendingCaptures();
  return n;
}

void Manager::OnRun(const std::string& method) {
  NoteUnregisteredFlagNames();
  std::lock_guard<std::mutex> sleeping(sleep_mu_);
  // A wake that fails for a method has dropped its graphs (logged), and the
  // call runs on without them.
  if (asleep_.load(std::memory_order_relaxed)) (void)WakeLocked("call", method);
}

StatusOr<int64_t> Manager::Sleep() {
  // Note [Sleep and background captures]: a capture on the manager's
  // worker thread grows and writes its method's arena, so the captures
  // pending are waited for first; one that a call queues meanwhile makes
  // its arena refuse to sleep, and the sleep fails, woken again, saying so.
  ENCORE_RETURN_IF_ERROR(WaitForCaptures());
  std::lock_guard<std::mutex> sleeping(sleep_mu_);
  std::shared_lock<std::shared_mutex> lock(mu_);
  int64_t bytes = 0;
  for (const auto& [name, m] : methods_) {
    StatusOr<size_t> given = m->SleepInstances();
    if (!given.ok()) {
      lock.unlock();
      asleep_.store(true, std::memory_order_release);
      (void)WakeLocked("sleep_failed", name);
      return given.status();
    }
    bytes += static_cast<int64_t>(*given);
  }
  asleep_.store(true, std::memory_order_release);
  // The next call of each method's instances runs its hook, which wakes the
  // manager (MethodInstance::Sleep made it due).
  log_->Info("sleep", {{"bytes", bytes}, {"methods", methods_.size()}});
  return bytes;
}

Status Manager::Wake() {
  std::lock_guard<std::mutex> sleeping(sleep_mu_);
  return WakeLocked("wake", {});
}

Status Manager::WakeLocked(std::string_view reason, std::string_view method) {
  if (!asleep_.load(std::memory_order_relaxed)) return OkStatus();
  Status first;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (const auto& [name, m] : methods_) {
      Status s = m->WakeInstances();
      if (first.ok()) first = s;
    }
  }
  asleep_.store(false, std::memory_order_release);
  if (method.empty()) {
    log_->Info("wake", {{"reason", reason}, {"ok", first.ok()}});
  } else {
    log_->Info("wake", {{"reason", reason}, {"method", method}, {"ok", first.ok()}});
  }
  return first;
}

std::string Manager::ReportJson() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::string j = "{\"methods\":[";
  bool first = true;
  for (const auto& [name, m] : methods_) {
    if (!first) j += ',';
    first = false;
    j += m->Report().ToJson();
  }
  // The version and the schema last, so a reader that matched the old
  // prefix still does; schema_version grows when a key changes meaning or
  // goes away (new keys do not change it).
  j += "],\"encore_version\":\"" + std::string(Version()) + "\",\"schema_version\":" +
       std::to_string(kReportSchemaVersion) + "}";
  return j;
}

}  // namespace encore
