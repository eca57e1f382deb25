// SPDX-License-Identifier: Apache-2.0
// ScopedCaptureMode: this thread's stream capture mode
// (cudaThreadExchangeStreamCaptureMode) set for a scope and put back at its
// end, through the fault-injectable table. Relaxed lets a thread allocate
// inside its own thread-local capture (as PyTorch's allocator does for its
// segments) and makes CUDA refuse none of its calls for another capture's
// sake; thread-local keeps another thread's global-mode capture from
// refusing this thread's calls.
#ifndef ENCORE_CORE_INTERNAL_SCOPED_CAPTURE_MODE_H_
#define ENCORE_CORE_INTERNAL_SCOPED_CAPTURE_MODE_H_

#include <cuda_runtime_api.h>

#include "encore/core/internal/cuda_api.h"

namespace encore {

class ScopedCaptureMode {
 public:
  explicit ScopedCaptureMode(cudaStreamCaptureMode mode)
      : mode_(mode), error_(cuda().ThreadExchangeStreamCaptureMode(&mode_)) {}
  ~ScopedCaptureMode() {
    if (error_ == cudaSuccess) (void)cuda().ThreadExchangeStreamCaptureMode(&mode_);
  }
  ScopedCaptureMode(const ScopedCaptureMode&) = delete;
  ScopedCaptureMode& operator=(const ScopedCaptureMode&) = delete;

  // What CUDA answered the exchange; the mode is unchanged unless success.
  [[nodiscard]] cudaError_t error() const { return error_; }

 private:
  cudaStreamCaptureMode mode_;  // the one to put back, once exchanged
  const cudaError_t error_;
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_SCOPED_CAPTURE_MODE_H_
