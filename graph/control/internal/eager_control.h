// SPDX-License-Identifier: Apache-2.0
// If and While outside a capture (eager and warmup calls): the flag is read
// on the host, one byte copied back and a stream sync per test, and the body
// runs on the same stream. Same semantics as the conditional nodes
// (ConditionalCapture): a loop's flag is tested before each iteration, and a
// loop whose flag is still true after max_iterations iterations stops there
// and says so.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_EAGER_CONTROL_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_EAGER_CONTROL_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "encore/core/status.h"
#include "encore/graph/control/internal/body_fn.h"

namespace encore {

// *device_cond after the work queued on `stream` so far. `pinned_byte`, if
// given, is one byte of pinned host memory to copy into (cheaper than the
// pageable default). A capture refusal (FailedPrecondition) when `stream` is
// being captured or the thread holds a capture (ScopedThreadCapture), since
// the sync would break it; InvalidArgument for a null condition.
[[nodiscard]] StatusOr<bool> ReadFlag(const bool* device_cond, cudaStream_t stream, bool* pinned_byte = nullptr);

// Runs `then_fn` on `stream` when *device_cond is true; says whether it ran.
[[nodiscard]] StatusOr<bool> RunEagerIf(const bool* device_cond, cudaStream_t stream, const BodyFn& then_fn,
                                        bool* pinned_byte = nullptr);

struct EagerLoopResult {
  int64_t iterations = 0;
  // The flag was still true after max_iterations iterations: what a graph
  // records as a runaway (LoopRecord); the caller makes it the
  // FailedPrecondition of LoopRunawayError.
  bool reached_bound = false;
};

// Runs `body_fn` on `stream` while *device_cond is true, at most
// `max_iterations` (>= 1, else InvalidArgument) times. The first error of
// the body or of a flag read stops the loop and is returned.
[[nodiscard]] StatusOr<EagerLoopResult> RunEagerWhile(const bool* device_cond, cudaStream_t stream,
                                                      const BodyFn& body_fn, int64_t max_iterations,
                                                      bool* pinned_byte = nullptr);

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_EAGER_CONTROL_H_
