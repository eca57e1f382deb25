#include "encore/graph/stream_capture.h"

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/log.h"

namespace encore {

StatusOr<StreamCapture> StreamCapture::Begin(cudaStream_t stream) {
  ENCORE_CUDA_CALL(StreamBeginCapture, stream, cudaStreamCaptureModeThreadLocal);
  return StreamCapture(stream);
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
    return FailedPreconditionError("cudaStreamGetCaptureInfo: the capture is no longer active (invalidated)");
  }
  return std::vector<cudaGraphNode_t>(deps, deps + n);
}

StatusOr<cudaGraphNode_t> StreamCapture::LastNode() const {
  ENCORE_ASSIGN_OR_RETURN(std::vector<cudaGraphNode_t> f, Frontier());
  if (f.size() != 1) return InternalError("expected one capture dependency after a launch, found " + std::to_string(f.size()));
  return f[0];
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
    *cuda_capture_error = IsCaptureError(err);
    return CudaStatus(err, CudaCallName(CudaCall::kStreamEndCapture));
  }
  return Graph(g);
}

}  // namespace encore
