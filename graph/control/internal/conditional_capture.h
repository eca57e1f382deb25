// SPDX-License-Identifier: Apache-2.0
// ConditionalCapture: CUDA IF and WHILE conditional nodes built inside a
// stream capture that is already going on (StreamCapture, thread-local
// mode). Each Add* reads the capture's graph and frontier, creates a
// conditional handle in that graph, captures the kernel that sets the
// handle from the device flag, adds the conditional node after it, makes the
// stream's later work depend on the node, and captures the body's work into
// the node's body graph from a body stream (BodyStreamPool). A WHILE body
// ends with the kernel that counts the iteration and sets the handle again;
// a loop that reaches max_iterations with its flag still true stops there
// and writes the runaway record (LoopRecord).
//
// Nesting: a body may call AddIf / AddWhile on the body stream it is given;
// each level uses the pool's stream of that level, so the pool must have
// been prepared deep enough before the capture.
//
// On an error the body's capture is ended (RAII), nothing throws, and the
// outer capture is left for the caller to end and discard; its graph is not
// fit to run. One thread, one capture: not thread-safe.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_CONDITIONAL_CAPTURE_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_CONDITIONAL_CAPTURE_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "encore/core/status.h"
#include "encore/graph/control/internal/body_fn.h"
#include "encore/graph/control/internal/body_stream_pool.h"
#include "encore/graph/control/internal/control_kernels.h"
#include "encore/graph/control/internal/graph_walk.h"
#include "encore/graph/control/internal/loop_counters.h"

namespace encore {

// What a capture's conditionals use, all made before the capture began.
struct ControlResources {
  const BodyStreamPool* streams = nullptr;  // required
  // Required for AddWhile: one counter slot per loop, kept alive with the
  // graph, and the record a runaway writes (LoopRecord::device()).
  LoopCounters* counters = nullptr;
  LoopRunaway* runaway = nullptr;
  // Optional: a device counter of the graph's replays, recorded with a
  // runaway so the host can name the call (DeviceChecks::sequence()).
  const unsigned long long* sequence = nullptr;
};

class ConditionalCapture {
 public:
  explicit ConditionalCapture(ControlResources resources) : res_(resources) {}
  ConditionalCapture(const ConditionalCapture&) = delete;
  ConditionalCapture& operator=(const ConditionalCapture&) = delete;

  // An IF node on `stream` (being captured): `then_fn`'s work runs in a
  // replay when *device_cond (one byte of device memory) is true at that
  // point of the stream. `then_fn` runs once, now.
  [[nodiscard]] Status AddIf(cudaStream_t stream, const bool* device_cond, const BodyFn& then_fn);
  // A WHILE node on `stream`: `body_fn`'s work runs while *device_cond is
  // true, tested before each iteration (the body updates it on the device),
  // at most `max_iterations` (>= 1) times per replay. `loop_id` is what the
  // runaway record names. `body_fn` runs once, now.
  [[nodiscard]] Status AddWhile(cudaStream_t stream, const bool* device_cond, const BodyFn& body_fn,
                                int64_t max_iterations, int loop_id);

  // The body graphs made so far, for ForEachNodeRecursive.
  const ConditionalBodies& bodies() const { return bodies_; }
  int conditionals() const { return conditionals_; }
  int loops() const { return loops_; }
  // Current nesting (0 outside any body) and the deepest reached (1: a
  // conditional on the captured stream itself).
  int depth() const { return depth_; }
  int max_depth() const { return max_depth_; }
  // True once a body's capture ended in an error (a body that broke its own
  // capture, say with a stream sync). The driver on the H200 (580) then
  // crashes in cuGraphDestroy of the enclosing graph, so its owner gives
  // that graph up instead of destroying it (a bounded leak per such
  // capture, logged as body_capture_broken).
  bool body_capture_broken() const { return body_capture_broken_; }

 private:
  struct Site {
    const char* what;  // "If" or "While"
    bool loop;
    unsigned long long* counter;
    int64_t bound;
    int loop_id;
  };
  class DepthScope;
  Status Add(const Site& site, cudaStream_t stream, const bool* cond, const BodyFn& body);
  Status CaptureBody(const Site& site, unsigned long long handle, const bool* cond, cudaStream_t body_stream,
                     cudaGraph_t body_graph, const BodyFn& body);

  const ControlResources res_;
  ConditionalBodies bodies_;
  int conditionals_ = 0;
  int loops_ = 0;
  int depth_ = 0;
  int max_depth_ = 0;
  bool body_capture_broken_ = false;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_CONDITIONAL_CAPTURE_H_
