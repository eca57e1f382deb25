// SPDX-License-Identifier: Apache-2.0
// Call::If and Call::While for a method instance. In a capture they become
// conditional nodes (graph/control); eager and warmup calls read the flag on
// the host before each test (a stream sync each: right, and no graph to
// keep for calls that are eager anyway).
#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/control/internal/conditional_support.h"
#include "encore/graph/control/internal/eager_control.h"
#include "encore/graph/runtime/internal/method_instance.h"
#include "encore/graph/internal/messages.h"

namespace encore {

namespace {

// A body's work as the control unit records or runs it: `fn` with a Call
// like `call` on `stream`.
BodyFn Body(const BodyRunner& runner, Call& call, const MethodFn& fn) {
  return [&runner, &call, &fn](cudaStream_t stream) -> Status {
    Call body = internal::CallHost::BodyCall(call, stream);
    return runner.Invoke(body, fn);
  };
}

}  // namespace

Status MethodInstance::If(Call& call, const bool* device_cond, const MethodFn& then_fn) {
  if (device_cond == nullptr) return InvalidArgumentError(MethodQuoted(s_.info.name) + ": If got a null condition");
  s_.control.uses_control = true;
  if (call.kind() != CallKind::kCapture) {
    return RunEagerIf(device_cond, call.stream(), Body(s_.runner, call, then_fn)).status();
  }
  if (s_.control.recording == nullptr) {
    const ConditionalSupport support = QueryConditionalSupport();
    return CaptureRefusal(MethodQuoted(s_.info.name) + ": Call::If in a capture: " +
                          (support.supported ? "the capture was not prepared for conditional nodes"
                                             : support.reason));
  }
  return s_.control.recording->AddIf(call.stream(), device_cond, Body(s_.runner, call, then_fn));
}

Status MethodInstance::While(Call& call, const bool* device_cond, const MethodFn& body_fn, int64_t max_iterations) {
  if (device_cond == nullptr) return InvalidArgumentError(MethodQuoted(s_.info.name) + ": While got a null condition");
  if (max_iterations <= 0) {
    return InvalidArgumentError(MethodQuoted(s_.info.name) + ": While needs max_iterations > 0, got " +
                                std::to_string(max_iterations));
  }
  s_.control.uses_control = true;
  if (call.kind() != CallKind::kCapture) {
    ENCORE_ASSIGN_OR_RETURN(EagerLoopResult r, RunEagerWhile(device_cond, call.stream(),
                                                             Body(s_.runner, call, body_fn), max_iterations));
    // As a graph's loop does: it stops at the bound, and the method's next
    // Run or Synchronize says so.
    if (r.reached_bound && s_.control.eager_runaway.empty()) {
      s_.control.eager_runaway = LoopRunawayMessage(s_.info.name, max_iterations, call.index());
    }
    return OkStatus();
  }
  if (s_.control.recording == nullptr) {
    const ConditionalSupport support = QueryConditionalSupport();
    return CaptureRefusal(MethodQuoted(s_.info.name) + ": Call::While in a capture: " +
                          (support.supported ? "the capture was not prepared for conditional nodes"
                                             : support.reason));
  }
  return s_.control.recording->AddWhile(call.stream(), device_cond, Body(s_.runner, call, body_fn), max_iterations,
                                    s_.control.recording->loops());
}

}  // namespace encore
