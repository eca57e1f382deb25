// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/internal/stream_capture.h"

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/log.h"

namespace encore {

StatusOr<StreamCapture> StreamCapture::Begin(cudaStream_t stream) {
  CaptureTicket ticket = CaptureTicket::Take();  // taken first: a device sync between would break the capture
  ENCORE_CUDA_CALL(StreamBeginCapture, stream, cudaStreamCaptureModeThreadLocal);
  return StreamCapture(stream, std::move(ticket));
}

StreamCapture::~StreamCapture() {
  if (!open_) return;
  cudaGraph_t g = nullptr;
  cudaError_t err = cuda().StreamEndCapture(stream_, &g);
  if (g) (void)cuda().GraphDestroy(g);
  // An invalidated capture leaves its error in cudart's last-error slot;
  // clear it so the caller's own error checks do not see ours.
  (void)cuda().GetLastError();
  if (err != cudaSuccess && !IsCaptureError(err)) {
    try {  // a destructor: the application's logger (ScopedEventLog) may throw
      ScopedEventLog().Error("end_capture_failed", {{"method", ScopedMethod()}, {"error", cudaGetErrorName(err)}});
    } catch (...) {
    }
  }
}

StatusOr<std::vector<cudaGraphNode_t>> StreamCapture::Frontier() const {
  cudaStreamCaptureStatus status;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  ENCORE_CUDA_CALL(StreamGetCaptureInfo, stream_, &status, &deps, &n);
  if (status != cudaStreamCaptureStatusActive) {
    return FailedPreconditionError(
        "cudaStreamGetCaptureInfo: the capture is no longer active: a call in the method invalidated it (a stream "
        "or device sync, a copy to pageable host memory, a read of a device value on the host); read device values "
        "through encore::shims, or set graphs=off for the method");
  }
  return std::vector<cudaGraphNode_t>(deps, deps + n);
}

StatusOr<cudaGraphNode_t> StreamCapture::LastNode() const {
  ENCORE_ASSIGN_OR_RETURN(std::vector<cudaGraphNode_t> f, Frontier());
  if (f.size() != 1) {
    return InternalError("the captured stream has " + std::to_string(f.size()) +
                         " dependencies after encore's staging node, expected 1: other work joined the capture "
                         "(another thread's cudaStreamWaitEvent on the captured stream, or work it issued into the "
                         "capture); call the method on a stream that nothing else waits on or launches into while "
                         "it captures");
  }
  return f[0];
}

void StreamCapture::EndAndGiveUp() noexcept {
  bool capture_error = false;
  StatusOr<Graph> g = End(&capture_error);
  if (g.ok()) (void)g->Release();  // see the header: destroying it crashes the driver
  try {  // the application's logger (ScopedEventLog) may throw
    ScopedEventLog().Error("body_capture_broken",
                           {{"method", ScopedMethod()}, {"action", "the captured graph is kept, not destroyed"}});
  } catch (...) {
  }
}

StatusOr<Graph> StreamCapture::End(bool* cuda_capture_error) {
  *cuda_capture_error = false;
  open_ = false;
  cudaGraph_t g = nullptr;
  cudaError_t err = cuda().StreamEndCapture(stream_, &g);
  if (err != cudaSuccess) {
    if (g) (void)cuda().GraphDestroy(g);
    (void)cuda().GetLastError();
    // An injected or real end-capture failure can leave the stream still in
    // capture mode; end it for real (past the seam, which may be failing
    // these very calls) so the stream is usable.
    const CudaApi& real = RealCudaApi();
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (real.StreamIsCapturing(stream_, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
      cudaGraph_t g2 = nullptr;
      (void)real.StreamEndCapture(stream_, &g2);
      if (g2) (void)real.GraphDestroy(g2);
      (void)real.GetLastError();
    }
    ticket_.Return();
    *cuda_capture_error = IsCaptureError(err);
    return CudaResult(err, CudaCall::kStreamEndCapture);
  }
  ticket_.Return();
  return Graph(g);
}

}  // namespace encore
