// SPDX-License-Identifier: Apache-2.0
// StreamCapture: one stream capture in thread-local mode, owned. If it is
// dropped while still open (an error path), the destructor ends the capture,
// discards the partial graph and clears the error CUDA left behind, so the
// stream is usable again. Nothing here throws once the capture has begun.
// While open it holds a CaptureTicket, so encore's device-wide syncs (on any
// thread) wait for it to end instead of invalidating it.
#ifndef ENCORE_GRAPH_INTERNAL_STREAM_CAPTURE_H_
#define ENCORE_GRAPH_INTERNAL_STREAM_CAPTURE_H_

#include <cuda_runtime_api.h>

#include <utility>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/internal/capture_fence.h"
#include "encore/graph/internal/graph.h"

namespace encore {

class StreamCapture {
 public:
  // Begins capturing `stream` in cudaStreamCaptureModeThreadLocal, so CUDA
  // calls other threads make neither break this capture nor get recorded.
  static StatusOr<StreamCapture> Begin(cudaStream_t stream);
  StreamCapture(StreamCapture&& o) noexcept : stream_(o.stream_), open_(o.open_), ticket_(std::move(o.ticket_)) {
    o.open_ = false;
  }
  StreamCapture& operator=(StreamCapture&&) = delete;
  StreamCapture(const StreamCapture&) = delete;
  ~StreamCapture();

  // The node the last operation on the stream added (its only dependency).
  StatusOr<cudaGraphNode_t> LastNode() const;
  // The nodes the next operation on the stream would depend on.
  StatusOr<std::vector<cudaGraphNode_t>> Frontier() const;
  // Ends the capture. On failure `*cuda_capture_error` says whether CUDA
  // reported a capture error (the capture was invalidated by an unsupported
  // call, say) rather than something else.
  StatusOr<Graph> End(bool* cuda_capture_error);
  // Ends the capture and gives its graph up undestroyed: for a graph holding
  // a conditional body whose own capture broke, which CUDA's driver (580)
  // crashes destroying (ConditionalCapture::body_capture_broken). Logged.
  void EndAndGiveUp() noexcept;

 private:
  StreamCapture(cudaStream_t s, CaptureTicket ticket) : stream_(s), open_(true), ticket_(std::move(ticket)) {}
  cudaStream_t stream_;
  bool open_;
  CaptureTicket ticket_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_INTERNAL_STREAM_CAPTURE_H_
