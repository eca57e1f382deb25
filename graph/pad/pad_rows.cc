// SPDX-License-Identifier: Apache-2.0
#include "graph/pad/internal/pad_rows.h"

#include <atomic>
#include <cstring>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "graph/internal/messages.h"

namespace encore {

Status PadRows::Prepare(const std::string& method) {
  if (host_) return OkStatus();
  // Portable and mapped: the graph may launch on streams of any device's
  // context that shares it, and reads the slot over the bus.
  StatusOr<PinnedHostMemory> m =
      PinnedHostMemory::Allocate(sizeof(PadRowsShared), cudaHostAllocMapped | cudaHostAllocPortable);
  if (!m.ok()) {
    return Status(m.status().code(), MethodQuoted(method) + ": padded rows ring: " + std::string(m.status().message()));
  }
  void* device = nullptr;
  ENCORE_RETURN_IF_ERROR(CudaResult(cuda().HostGetDevicePointer(&device, m->get(), 0), CudaCall::kHostGetDevicePointer,
                                    MethodQuoted(method) + ": padded rows ring"));
  std::memset(m->get(), 0, sizeof(PadRowsShared));
  memory_ = *std::move(m);
  host_ = memory_.as<PadRowsShared>();
  device_ = static_cast<PadRowsShared*>(device);
  launches_ = 0;
  return OkStatus();
}

bool PadRows::behind() const {
  const volatile PadRowsShared* r = host_;
  return launches_ - r->launches >= PadRowsShared::kSlots;
}

void PadRows::Stage(int64_t rows) {
  volatile PadRowsShared* r = host_;
  r->rows[launches_ % PadRowsShared::kSlots] = static_cast<uint64_t>(rows);
  // Written before the launch that reads it is queued.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace encore
