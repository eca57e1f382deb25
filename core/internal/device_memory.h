// SPDX-License-Identifier: Apache-2.0
// Owners of raw CUDA memory: DeviceMemory (cudaMalloc / cudaFree) and
// PinnedHostMemory (cudaHostAlloc / cudaFreeHost), both CudaHandles, both
// through the fault table.
#ifndef ENCORE_CORE_INTERNAL_DEVICE_MEMORY_H_
#define ENCORE_CORE_INTERNAL_DEVICE_MEMORY_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>

#include "encore/core/cuda_handle.h"
#include "encore/core/status.h"

namespace encore {
namespace internal {
struct DeviceMemoryTraits {
  using Handle = void*;
  static cudaError_t Destroy(void* p);
  static constexpr std::string_view kWhat = "device_memory";
};
struct PinnedHostMemoryTraits {
  using Handle = void*;
  static cudaError_t Destroy(void* p);
  static constexpr std::string_view kWhat = "pinned_host_memory";
};
}  // namespace internal

class DeviceMemory : public CudaHandle<internal::DeviceMemoryTraits> {
 public:
  using CudaHandle::CudaHandle;
  [[nodiscard]] static StatusOr<DeviceMemory> Allocate(size_t bytes);
  template <typename T>
  T* as() const {
    return static_cast<T*>(get());
  }
};

class PinnedHostMemory : public CudaHandle<internal::PinnedHostMemoryTraits> {
 public:
  using CudaHandle::CudaHandle;
  [[nodiscard]] static StatusOr<PinnedHostMemory> Allocate(size_t bytes, unsigned flags = cudaHostAllocDefault);
  template <typename T>
  T* as() const {
    return static_cast<T*>(get());
  }
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_DEVICE_MEMORY_H_
