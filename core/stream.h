// SPDX-License-Identifier: Apache-2.0
// Stream and Event owners (move-only RAII) and StreamView, a non-owning view
// of a stream.
#ifndef ENCORE_CORE_STREAM_H_
#define ENCORE_CORE_STREAM_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>

#include "encore/core/cuda_handle.h"
#include "encore/core/status.h"

namespace encore {

// A non-owning stream handle. A literal 0 does not convert: the legacy default
// stream synchronizes with every other blocking stream and cannot be captured,
// so asking for it must be explicit (StreamView::LegacyDefault()).
class StreamView {
 public:
  constexpr StreamView(cudaStream_t s) : s_(s) {}  // NOLINT: implicit by design
  StreamView(int) = delete;
  StreamView(std::nullptr_t) = delete;

  static StreamView LegacyDefault() { return StreamView(cudaStreamLegacy); }
  static StreamView PerThreadDefault() { return StreamView(cudaStreamPerThread); }

  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }  // NOLINT
  // Both spellings of the legacy stream: nullptr (0) and cudaStreamLegacy.
  bool is_legacy_default() const { return s_ == nullptr || s_ == cudaStreamLegacy; }

 private:
  cudaStream_t s_;
};

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
  StreamView view() const { return StreamView(get()); }
};

// Owns an event; timing is off by default because timing events cost more to
// record and nothing on the replay path needs them.
class Event : public CudaHandle<internal::EventTraits> {
 public:
  using CudaHandle::CudaHandle;
  [[nodiscard]] static StatusOr<Event> Create(unsigned flags = cudaEventDisableTiming);
};

}  // namespace encore

#endif  // ENCORE_CORE_STREAM_H_
