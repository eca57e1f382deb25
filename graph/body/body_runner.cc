// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/body/internal/body_runner.h"

#include <exception>

#include "encore/graph/internal/messages.h"

namespace encore {
namespace internal {

constinit thread_local const void* t_running_body = nullptr;

}  // namespace internal

using internal::t_running_body;

Status BodyRunner::Reentered(std::string_view what) const {
  return FailedPreconditionError(MethodQuoted(*method_) + ": " + std::string(what) +
                                 " was called from inside the method's own body; a method cannot call itself");
}

Status BodyRunner::Invoke(Call& call, const MethodFn& fn) const {
  const void* outer = t_running_body;
  t_running_body = owner_;
  Status s;
  try {
    s = fn(call);
  } catch (const std::exception& e) {
    s = InternalError(MethodQuoted(*method_) + " threw: " + e.what());
  } catch (...) {
    s = InternalError(MethodQuoted(*method_) + " threw a non-standard exception");
  }
  t_running_body = outer;
  return s;
}

Status BodyRunner::RunStages(size_t first, size_t last, Args inputs, Args outputs, cudaStream_t stream,
                             CallKind kind, int64_t index) const {
  Status s;
  for (size_t i = first; i < last && s.ok(); ++i) {
    const Stage& stage = body_->stages()[i];
    Call call = internal::CallHost::MakeCall(host_, stream, inputs, outputs, kind, index, stage.name);
    s = Invoke(call, stage.fn);
  }
  Status freed = NameMethod(*method_, arena_->EndEagerCall(stream));
  return s.ok() ? freed : s;
}

Status BodyRunner::RunCaptured(size_t first, size_t last, Args inputs, Args outputs, cudaStream_t stream,
                               int64_t index, std::vector<std::shared_ptr<void>>* kept) const {
  Status s;
  for (size_t i = first; i < last && s.ok(); ++i) {
    const Stage& stage = body_->stages()[i];
    Call call = internal::CallHost::MakeCall(host_, stream, inputs, outputs, CallKind::kCapture, index, stage.name);
    s = Invoke(call, stage.fn);
    for (auto& owner : internal::CallHost::TakeKept(call)) kept->push_back(std::move(owner));
  }
  return s;
}

}  // namespace encore
