// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/device_memory.h"

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace internal {
cudaError_t DeviceMemoryTraits::Destroy(void* p) { return cuda().Free(p); }
cudaError_t PinnedHostMemoryTraits::Destroy(void* p) { return cuda().FreeHost(p); }
}  // namespace internal

StatusOr<DeviceMemory> DeviceMemory::Allocate(size_t bytes) {
  void* p = nullptr;
  ENCORE_CUDA_CALL(Malloc, &p, bytes);
  return DeviceMemory(p);
}

StatusOr<PinnedHostMemory> PinnedHostMemory::Allocate(size_t bytes, unsigned flags) {
  void* p = nullptr;
  ENCORE_CUDA_CALL(HostAlloc, &p, bytes, flags);
  return PinnedHostMemory(p);
}

}  // namespace encore
