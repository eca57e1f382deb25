// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/device_io.h"

#include <string>

#include "encore/core/internal/cuda_api.h"

namespace encore::verify_io {

Status RefuseInCapture(cudaStream_t stream, std::string_view what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ENCORE_CUDA_CALL(StreamIsCapturing, stream, &status);
  if (status != cudaStreamCaptureStatusNone) {
    return FailedPreconditionError(std::string(what) + " cannot run while its stream is capturing");
  }
  return OkStatus();
}

Status ReadBack(void* host, const void* device, size_t bytes, cudaStream_t stream, std::string_view what) {
  ENCORE_RETURN_IF_ERROR(RefuseInCapture(stream, what));
  if (bytes != 0) ENCORE_CUDA_CALL(MemcpyAsync, host, device, bytes, cudaMemcpyDeviceToHost, stream);
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  return OkStatus();
}

Status Upload(void* device, const void* host, size_t bytes, cudaStream_t stream, std::string_view what) {
  ENCORE_RETURN_IF_ERROR(RefuseInCapture(stream, what));
  if (bytes != 0) ENCORE_CUDA_CALL(MemcpyAsync, device, host, bytes, cudaMemcpyHostToDevice, stream);
  return OkStatus();
}

}  // namespace encore::verify_io
