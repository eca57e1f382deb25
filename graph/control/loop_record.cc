// SPDX-License-Identifier: Apache-2.0
#include "graph/control/internal/loop_record.h"

#include <atomic>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"

namespace encore {

StatusOr<LoopRecord> LoopRecord::Create() {
  void* host = nullptr;
  // Portable: loops may run on streams of any device.
  ENCORE_CUDA_CALL(HostAlloc, &host, sizeof(LoopRunaway), cudaHostAllocMapped | cudaHostAllocPortable);
  void* device = nullptr;
  cudaError_t err = cuda().HostGetDevicePointer(&device, host, 0);
  if (err != cudaSuccess) {
    (void)cuda().FreeHost(host);
    (void)cuda().GetLastError();  // ours, reported below
    return CudaResult(err, CudaCall::kHostGetDevicePointer, "loop record");
  }
  LoopRecord record(static_cast<LoopRunaway*>(host), static_cast<LoopRunaway*>(device));
  record.Clear();
  return record;
}

cudaError_t LoopRecord::PinnedTraits::Destroy(LoopRunaway* host) { return cuda().FreeHost(host); }

std::optional<LoopRecord::Runaway> LoopRecord::Take() {
  if (!pending()) return std::nullopt;
  // The kernel fenced its fields before it wrote the state read above.
  std::atomic_thread_fence(std::memory_order_acquire);
  volatile LoopRunaway* r = host_.get();
  Runaway out{r->loop_id, static_cast<int64_t>(r->bound), static_cast<uint64_t>(r->seq)};
  Clear();
  return out;
}

void LoopRecord::Clear() {
  if (!host_) return;
  volatile LoopRunaway* r = host_.get();
  r->loop_id = 0;
  r->bound = 0;
  r->seq = 0;
  // The fields are clean before a loop can see `state` at 0 again.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  r->state = 0;
}

std::string LoopRunawayMessage(std::string_view method, int64_t bound, int64_t call) {
  return "method '" + std::string(method) + "': a While loop reached its bound of " + std::to_string(bound) +
         " iterations with its condition still true (call " + (call >= 0 ? std::to_string(call) : "unknown") + ")";
}

Status LoopRunawayError(std::string_view method, int64_t bound, int64_t call) {
  return FailedPreconditionError(LoopRunawayMessage(method, bound, call));
}

}  // namespace encore
