// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/call.h"

#include "encore/graph/internal/call_host.h"

namespace encore {
namespace {

const TensorRef& EmptyTensor() {
  static const TensorRef empty{};
  return empty;
}

}  // namespace

std::string_view CallKindName(CallKind k) {
  switch (k) {
    case CallKind::kEager: return "eager";
    case CallKind::kWarmup: return "warmup";
    case CallKind::kCapture: return "capture";
  }
  return "unknown";
}

Call::~Call() = default;

const TensorRef& Call::input(size_t i) const { return i < inputs_.size() ? inputs_[i] : EmptyTensor(); }
const TensorRef& Call::output(size_t i) const { return i < outputs_.size() ? outputs_[i] : EmptyTensor(); }

StatusOr<void*> Call::Allocate(size_t bytes) { return host_->Allocate(*this, bytes); }

Status Call::Check(const bool* device_cond, std::string_view message) {
  return host_->Check(*this, device_cond, message);
}

Status Call::If(const bool* device_cond, const MethodFn& then_fn) { return host_->If(*this, device_cond, then_fn); }

Status Call::While(const bool* device_cond, const MethodFn& body_fn, int64_t max_iterations) {
  return host_->While(*this, device_cond, body_fn, max_iterations);
}

Status Call::KeepWithGraph(std::shared_ptr<void> owner) {
  if (!owner) return InvalidArgumentError("Call::KeepWithGraph: the owner is null");
  // A body's owners belong to the call (and so the graph) it is part of.
  root().kept_.push_back(std::move(owner));
  return OkStatus();
}

}  // namespace encore
