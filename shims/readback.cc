// SPDX-License-Identifier: Apache-2.0
#include "encore/shims/internal/readback.h"

#include <cstring>
#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/scoped_thread_capture.h"

namespace encore::shims::internal {
namespace {

// One pinned buffer per thread, made on first use and kept: cudaHostAlloc
// costs far more than the copy it serves, and a thread's readbacks never
// overlap because each waits for its copy before returning.
class Staging {
 public:
  ~Staging() {
    // At process exit the runtime may already be gone; nothing to report.
    if (p_ != nullptr) (void)cuda().FreeHost(p_);
  }
  StatusOr<void*> Get() {
    if (p_ == nullptr) {
      // Portable: the same buffer serves a stream of any device.
      ENCORE_CUDA_CALL(HostAlloc, &p_, kStagingBytes, cudaHostAllocPortable);
    }
    return p_;
  }

 private:
  void* p_ = nullptr;
};

StatusOr<void*> ThreadStaging() {
  thread_local Staging staging;
  return staging.Get();
}

Status CheckSize(size_t bytes) {
  if (bytes > kStagingBytes) {
    return InternalError("shims staging holds " + std::to_string(kStagingBytes) + " bytes, asked for " +
                         std::to_string(bytes));
  }
  return OkStatus();
}

std::string_view MemoryTypeName(cudaMemoryType t) {
  switch (t) {
    case cudaMemoryTypeUnregistered: return "unregistered host memory";
    case cudaMemoryTypeHost: return "pinned host memory";
    case cudaMemoryTypeDevice: return "device memory";
    case cudaMemoryTypeManaged: return "managed memory";
  }
  return "unknown memory";
}

}  // namespace

Status RefuseIfCapturing(cudaStream_t stream, std::string_view message) {
  // This thread is capturing some stream: CUDA would reject the sync even on
  // another stream, and break that capture.
  if (ScopedThreadCapture::Active()) return CaptureRefusal(message);
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaError_t err = cuda().StreamIsCapturing(stream, &st);
  // The legacy stream answers "implicit" while another blocking stream is
  // being captured: syncing it would join and break that capture. The answer
  // also sets the thread's last error, which the caller's next launch check
  // (cudaGetLastError) would take for its own failure, so clear it.
  if (err == cudaErrorStreamCaptureImplicit) {
    (void)cuda().GetLastError();
    return CaptureRefusal(message);
  }
  if (err != cudaSuccess) return CudaResult(err, CudaCall::kStreamIsCapturing);
  // An invalidated capture is still open: a sync now would not make it valid.
  if (st != cudaStreamCaptureStatusNone) return CaptureRefusal(message);
  return OkStatus();
}

Status RequireDevicePointer(const void* p, std::string_view what) {
  cudaPointerAttributes attr{};
  cudaError_t err = cuda().PointerGetAttributes(&attr, p);
  if (err == cudaErrorInvalidValue) {
    // Older drivers answer an unknown host pointer this way; it also leaves
    // the error pending for cudaGetLastError, so clear it.
    (void)cuda().GetLastError();
    return InvalidArgumentError(std::string(what) + " is not device memory (CUDA does not know the pointer)");
  }
  if (err != cudaSuccess) return CudaResult(err, CudaCall::kPointerGetAttributes);
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
    return InvalidArgumentError(std::string(what) + " is not device memory (it is " +
                                std::string(MemoryTypeName(attr.type)) + ")");
  }
  return OkStatus();
}

Status ReadBack(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSize(bytes));
  ENCORE_ASSIGN_OR_RETURN(void* staging, ThreadStaging());
  ENCORE_CUDA_CALL(MemcpyAsync, staging, device, bytes, cudaMemcpyDeviceToHost, stream);
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  std::memcpy(host, staging, bytes);
  return OkStatus();
}

Status WriteAndSync(void* device, const void* host, size_t bytes, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSize(bytes));
  ENCORE_ASSIGN_OR_RETURN(void* staging, ThreadStaging());
  std::memcpy(staging, host, bytes);
  ENCORE_CUDA_CALL(MemcpyAsync, device, staging, bytes, cudaMemcpyHostToDevice, stream);
  // The sync also keeps the staging buffer untouched until the copy has read it.
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  return OkStatus();
}

}  // namespace encore::shims::internal
