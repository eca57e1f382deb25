// SPDX-License-Identifier: Apache-2.0
// MappedHost<T>: owns one T in mapped, portable pinned host memory. The
// device writes or reads it through device(), the host through host(), with
// no copy and no sync: what the device checks' record, a WHILE loop's
// runaway record and the padded rows' ring share. Every CUDA call goes
// through the fault-injectable table (core/internal/cuda_api.h).
#ifndef ENCORE_CORE_INTERNAL_MAPPED_HOST_H_
#define ENCORE_CORE_INTERNAL_MAPPED_HOST_H_

#include <cuda_runtime_api.h>

#include <cstring>
#include <string_view>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/device_memory.h"
#include "encore/core/status.h"

namespace encore {

template <typename T>
class MappedHost {
 public:
  // A zeroed T; allocate it outside any capture. An error of cudaHostAlloc
  // or cudaHostGetDevicePointer comes back as a Status naming the call, with
  // `context` appended, and nothing left allocated.
  [[nodiscard]] static StatusOr<MappedHost> Create(std::string_view context = {}) {
    void* host = nullptr;
    // Portable: the memory is used from streams of any device.
    cudaError_t err = cuda().HostAlloc(&host, sizeof(T), cudaHostAllocMapped | cudaHostAllocPortable);
    if (err != cudaSuccess) return CudaResult(err, CudaCall::kHostAlloc, context);
    PinnedHostMemory memory(host);  // freed on every path out
    void* device = nullptr;
    err = cuda().HostGetDevicePointer(&device, host, 0);
    if (err != cudaSuccess) return CudaResult(err, CudaCall::kHostGetDevicePointer, context);
    std::memset(host, 0, sizeof(T));
    return MappedHost(std::move(memory), static_cast<T*>(device));
  }

  MappedHost() = default;
  MappedHost(MappedHost&& o) noexcept : memory_(std::move(o.memory_)), device_(std::exchange(o.device_, nullptr)) {}
  MappedHost& operator=(MappedHost&& o) noexcept {
    memory_ = std::move(o.memory_);
    device_ = std::exchange(o.device_, nullptr);
    return *this;
  }
  // Destruction frees the memory (an error is logged, never thrown): nothing
  // that uses device() may still be queued, or captured in a live graph.

  explicit operator bool() const { return static_cast<bool>(memory_); }
  // The host's view: volatile, since the device writes it behind the
  // compiler's back.
  volatile T* host() const { return memory_.as<T>(); }
  // The device's view of the same bytes.
  T* device() const { return device_; }

 private:
  MappedHost(PinnedHostMemory memory, T* device) : memory_(std::move(memory)), device_(device) {}

  PinnedHostMemory memory_;
  T* device_ = nullptr;
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_MAPPED_HOST_H_
