// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/eager_control.h"

#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/scoped_thread_capture.h"

namespace encore {

StatusOr<bool> ReadFlag(const bool* device_cond, cudaStream_t stream, bool* pinned_byte) {
  if (device_cond == nullptr) return InvalidArgumentError("If/While: the condition pointer is null");
  // Checked before the stream: a sync of any stream from a capturing thread
  // invalidates that thread's capture (see core/internal/scoped_thread_capture.h).
  if (ScopedThreadCapture::Active()) {
    return CaptureRefusal("If/While: reading the condition on the host inside a capture; captured calls use "
                          "conditional nodes (ConditionalCapture)");
  }
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  ENCORE_CUDA_CALL(StreamIsCapturing, stream, &st);
  if (st != cudaStreamCaptureStatusNone) {
    return CaptureRefusal("If/While: reading the condition on the host of a stream being captured");
  }
  unsigned char pageable = 0;
  void* dst = pinned_byte != nullptr ? static_cast<void*>(pinned_byte) : static_cast<void*>(&pageable);
  ENCORE_CUDA_CALL(MemcpyAsync, dst, device_cond, 1, cudaMemcpyDeviceToHost, stream);
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  return *static_cast<volatile unsigned char*>(dst) != 0;
}

StatusOr<bool> RunEagerIf(const bool* device_cond, cudaStream_t stream, const BodyFn& then_fn, bool* pinned_byte) {
  if (!then_fn) return InvalidArgumentError("If: the body function is empty");
  ENCORE_ASSIGN_OR_RETURN(bool taken, ReadFlag(device_cond, stream, pinned_byte));
  if (taken) ENCORE_RETURN_IF_ERROR(then_fn(stream));
  return taken;
}

StatusOr<EagerLoopResult> RunEagerWhile(const bool* device_cond, cudaStream_t stream, const BodyFn& body_fn,
                                        int64_t max_iterations, bool* pinned_byte) {
  if (max_iterations <= 0) {
    return InvalidArgumentError("While: max_iterations is " + std::to_string(max_iterations) +
                                "; it must be at least 1");
  }
  if (!body_fn) return InvalidArgumentError("While: the body function is empty");
  EagerLoopResult result;
  while (true) {
    ENCORE_ASSIGN_OR_RETURN(bool go, ReadFlag(device_cond, stream, pinned_byte));
    if (!go) return result;
    if (result.iterations == max_iterations) {
      result.reached_bound = true;
      return result;
    }
    ENCORE_RETURN_IF_ERROR(body_fn(stream));
    ++result.iterations;
  }
}

}  // namespace encore
