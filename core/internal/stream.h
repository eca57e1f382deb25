// SPDX-License-Identifier: Apache-2.0
// Stream and Event owners (move-only RAII).
#ifndef ENCORE_CORE_INTERNAL_STREAM_H_
#define ENCORE_CORE_INTERNAL_STREAM_H_

#include <cuda_runtime_api.h>

#include <string_view>

#include "encore/core/cuda_handle.h"
#include "encore/core/status.h"

namespace encore {

namespace internal {
struct StreamTraits {
  using Handle = cudaStream_t;
  static cudaError_t Destroy(cudaStream_t s);
  static constexpr std::string_view kWhat = "stream";
};
struct EventTraits {
  using Handle = cudaEvent_t;
  static cudaError_t Destroy(cudaEvent_t e);
  static constexpr std::string_view kWhat = "event";
};
}  // namespace internal

// Owns a non-blocking stream.
class Stream : public CudaHandle<internal::StreamTraits> {
 public:
  using CudaHandle::CudaHandle;
  [[nodiscard]] static StatusOr<Stream> Create(unsigned flags = cudaStreamNonBlocking);
};

// Owns an event; timing is off by default because timing events cost more to
// record and nothing on the replay path needs them.
class Event : public CudaHandle<internal::EventTraits> {
 public:
  using CudaHandle::CudaHandle;
  [[nodiscard]] static StatusOr<Event> Create(unsigned flags = cudaEventDisableTiming);
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_STREAM_H_
