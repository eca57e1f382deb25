#include "encore/graph/manager.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "encore/core/log.h"

namespace encore {

StatusOr<std::unique_ptr<Manager>> Manager::Create(ManagerOptions options) {
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
  return std::unique_ptr<Manager>(new Manager(std::move(options), *std::move(parsed)));
}

Manager::Manager(ManagerOptions options, FlagsText text)
    : options_(std::move(options)), flags_text_(std::move(text)),
      log_(std::make_shared<const EventLog>(options_.logger)) {}

Manager::~Manager() = default;

StatusOr<Method*> Manager::Register(MethodSpec spec) {
  if (spec.name.empty()) return InvalidArgumentError("Register: the method name is empty");
  if (!spec.fn) return InvalidArgumentError("Register: method '" + spec.name + "' has no fn");
  if (spec.constants) {
    if (Status s = ValidateConstants(spec.name, *spec.constants); !s.ok()) {
      return InvalidArgumentError("Register: " + std::string(s.message()));
    }
  }
  MethodFlags flags = flags_text_.Resolve(spec.name, spec.flags.value_or(options_.defaults));
  ENCORE_RETURN_IF_ERROR(ValidateMethodFlags(flags, "Register: method '" + spec.name + "'"));

  std::unique_lock<std::shared_mutex> lock(mu_);
  if (methods_.count(spec.name)) {
    return AlreadyExistsError("Register: a method named '" + spec.name + "' is already registered");
  }
  auto method = std::unique_ptr<Method>(new Method(spec.name, std::move(spec.fn), std::move(spec.constants), flags,
                                                   log_, [this] { WarnUnknownFlagNames(); }, options_.consensus));
  Method* raw = method.get();
  methods_.emplace(raw->name(), std::move(method));
  log_->Info("registered", {{"method", raw->name()},
                           {"graphs", flags.graphs},
                           {"warmup", flags.warmup_calls},
                           {"on_new_shape", ShapePolicyName(flags.on_new_shape)},
                           {"max_graphs", flags.max_graphs},
                           {"checks", CheckModeName(flags.checks)},
                           {"copy_outputs", flags.copy_outputs}});
  return raw;
}

Method* Manager::Find(std::string_view name) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = methods_.find(name);
  return it == methods_.end() ? nullptr : it->second.get();
}

void Manager::WarnUnknownFlagNames() {
  // Methods are registered after Create, so names in the flags text can only
  // be judged once the application starts calling them.
  std::call_once(warned_unknown_, [this] {
    std::vector<std::string> known;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      for (const auto& [name, m] : methods_) known.push_back(name);
    }
    for (const std::string& n : flags_text_.UnknownMethods(known)) {
      log_->Warn("unknown_method_in_flags", {{"method", n}, {"detail", "no registered method has this name"}});
    }
  });
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
  j += "]}";
  return j;
}

}  // namespace encore
