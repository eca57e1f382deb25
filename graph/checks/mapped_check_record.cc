// SPDX-License-Identifier: Apache-2.0
#include "graph/checks/internal/mapped_check_record.h"

#include <atomic>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"

namespace encore {

StatusOr<MappedCheckRecord> MappedCheckRecord::Create() {
  void* host = nullptr;
  // Portable: checks may run on streams of any device.
  ENCORE_CUDA_CALL(HostAlloc, &host, sizeof(CheckRecord), cudaHostAllocMapped | cudaHostAllocPortable);
  void* device = nullptr;
  cudaError_t err = cuda().HostGetDevicePointer(&device, host, 0);
  if (err != cudaSuccess) {
    (void)cuda().FreeHost(host);
    return CudaResult(err, CudaCall::kHostGetDevicePointer);
  }
  MappedCheckRecord record(static_cast<CheckRecord*>(host), static_cast<CheckRecord*>(device));
  record.Clear();
  return record;
}

cudaError_t MappedCheckRecord::PinnedTraits::Destroy(CheckRecord* host) { return cuda().FreeHost(host); }

void MappedCheckRecord::Clear() {
  if (!host_) return;
  volatile CheckRecord* r = host_.get();
  r->check_id = 0;
  r->seq = 0;
  r->call_index = 0;
  // The fields are clean before a check can see `failed` at 0 again.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  r->failed = 0;
}

}  // namespace encore
