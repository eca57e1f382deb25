// SPDX-License-Identifier: Apache-2.0
// BodyRunner: runs a method's stages. Nothing may throw past it while a
// capture is open (an exception would leave the stream capturing), so a
// body's exceptions become a Status; a body that calls its own method again
// on this thread gets an error instead of a deadlock on the method's mutex.
#ifndef ENCORE_GRAPH_BODY_INTERNAL_BODY_RUNNER_H_
#define ENCORE_GRAPH_BODY_INTERNAL_BODY_RUNNER_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <memory>
#include <vector>

#include "encore/allocator/internal/graph_arena.h"
#include "encore/core/status.h"
#include "encore/graph/call.h"
#include "encore/core/internal/args.h"
#include "encore/graph/body/internal/method_body.h"
#include "encore/graph/internal/call_host.h"

namespace encore {
namespace internal {
// The method instance whose body this thread is running (innermost); read
// inline on every call, so a replay's re-entry test is one load.
extern constinit thread_local const void* t_running_body;
}  // namespace internal

class BodyRunner {
 public:
  // `owner` identifies the method instance (the re-entry guard), `host`
  // serves its Calls.
  BodyRunner(const void* owner, const std::string* method, const MethodBody* body, internal::CallHost* host,
             GraphArena* arena)
      : owner_(owner), method_(method), body_(body), host_(host), arena_(arena) {}

  // Runs `fn` for `call`, its exceptions turned into a Status.
  Status Invoke(Call& call, const MethodFn& fn) const;
  // Stages [first, last) as calls of `kind` on `stream`; stops at the first
  // that fails and returns its status. Eager scratch is returned at the end.
  Status RunStages(size_t first, size_t last, Args inputs, Args outputs, cudaStream_t stream, CallKind kind,
                   int64_t index) const;
  // Every stage.
  Status RunAll(Args inputs, Args outputs, cudaStream_t stream, CallKind kind, int64_t index) const {
    return RunStages(0, body_->stages().size(), inputs, outputs, stream, kind, index);
  }
  // Stages [first, last) recorded into a capture on `stream` (kind
  // kCapture); what they kept with Call::KeepWithGraph is appended to
  // `kept`. Stops at the first that fails.
  Status RunCaptured(size_t first, size_t last, Args inputs, Args outputs, cudaStream_t stream, int64_t index,
                     std::vector<std::shared_ptr<void>>* kept) const;
  // FailedPrecondition when this thread is inside this method's body.
  Status RejectReentry(std::string_view what) const { return InBody() ? Reentered(what) : OkStatus(); }
  bool InBody() const { return internal::t_running_body == owner_; }

 private:
  Status Reentered(std::string_view what) const;

  const void* const owner_;
  const std::string* const method_;
  const MethodBody* const body_;
  internal::CallHost* const host_;
  GraphArena* const arena_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_BODY_INTERNAL_BODY_RUNNER_H_
