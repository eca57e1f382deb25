// SPDX-License-Identifier: Apache-2.0
// BodyStreamPool: the streams that conditional bodies are captured from, one
// per nesting level (level 0 holds the bodies of the conditionals on the
// captured stream itself, level 1 those inside them, ...). CUDA captures a
// body by capturing a stream into the body graph, and a stream cannot be
// created inside a capture, so the pool is filled before it: Prepare(depth).
// Siblings at one level reuse its stream, since a body's capture ends before
// the next conditional at that level begins.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_BODY_STREAM_POOL_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_BODY_STREAM_POOL_H_

#include <cuda_runtime_api.h>

#include <vector>

#include "encore/core/status.h"
#include "encore/core/internal/stream.h"

namespace encore {

class BodyStreamPool {
 public:
  // Nesting levels a pool holds unless told otherwise; the design asks for 4.
  static constexpr int kDefaultDepth = 8;

  BodyStreamPool() = default;
  BodyStreamPool(BodyStreamPool&&) = default;
  BodyStreamPool& operator=(BodyStreamPool&&) = default;

  // Outside any capture, on the device of the streams to be captured: makes
  // sure streams for `depth` levels exist (non-blocking streams; existing
  // ones are kept). FailedPrecondition on a thread that is capturing
  // (ScopedThreadCapture), InvalidArgument for depth < 1 or > 64.
  [[nodiscard]] Status Prepare(int depth = kDefaultDepth);
  // The stream of nesting level `level`; ResourceExhausted naming the depth
  // prepared when there is none.
  [[nodiscard]] StatusOr<cudaStream_t> At(int level) const;
  int depth() const { return static_cast<int>(streams_.size()); }

 private:
  std::vector<Stream> streams_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_BODY_STREAM_POOL_H_
