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
  (void)cudaGetLastError();
  if (err != cudaSuccess && !IsCaptureError(err)) {
    EventLog().Error("end_capture_failed", {{"error", cudaGetErrorName(err)}});
  }
}

StatusOr<std::vector<cudaGraphNode_t>> StreamCapture::Frontier() const {
  cudaStreamCaptureStatus status;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  cudaError_t err = cudaStreamGetCaptureInfo(stream_, &status, nullptr, nullptr, &deps, nullptr, &n);
  if (err != cudaSuccess) return CudaStatus(err, "cudaStreamGetCaptureInfo");
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
    (void)cudaGetLastError();
    // An injected or real end-capture failure can leave the stream still in
    // capture mode; end it for real so the stream is usable.
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
      cudaGraph_t g2 = nullptr;
      (void)cudaStreamEndCapture(stream_, &g2);
      if (g2) (void)cudaGraphDestroy(g2);
      (void)cudaGetLastError();
    }
    *cuda_capture_error = IsCaptureError(err);
    return CudaStatus(err, CudaCallName(CudaCall::kStreamEndCapture));
  }
  return Graph(g);
}

}  // namespace encore
