// SPDX-License-Identifier: Apache-2.0
// CudaHandle<Traits>: the one move-only owner of a CUDA handle (stream,
// event, graph, executable, device or pinned memory). Traits give the handle
// type, how to destroy it (through the fault seam) and what to call it in a
// log line. Destroying never throws: a failed destroy is logged at error,
// because a destructor has no one to return an error to.
#ifndef ENCORE_CORE_CUDA_HANDLE_H_
#define ENCORE_CORE_CUDA_HANDLE_H_

#include <cuda_runtime_api.h>

#include <string_view>
#include <utility>

namespace encore {
namespace internal {
// Logs event=destroy_failed what=<what> error=<name> on ScopedEventLog(): the
// application's logger when a Method or Manager owns the handle (log.h).
void LogDestroyFailure(std::string_view what, cudaError_t err) noexcept;
}  // namespace internal

// Traits: `using Handle = ...;` (null when empty), `static cudaError_t
// Destroy(Handle)`, `static constexpr std::string_view kWhat`.
template <typename Traits>
class CudaHandle {
 public:
  using Handle = typename Traits::Handle;

  CudaHandle() = default;
  // Takes ownership of `h`.
  explicit CudaHandle(Handle h) : h_(h) {}
  ~CudaHandle() {
    if (cudaError_t err = Destroy(); err != cudaSuccess) internal::LogDestroyFailure(Traits::kWhat, err);
  }
  CudaHandle(CudaHandle&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  CudaHandle& operator=(CudaHandle&& o) noexcept {
    if (this != &o) {
      if (cudaError_t err = Destroy(); err != cudaSuccess) internal::LogDestroyFailure(Traits::kWhat, err);
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;

  Handle get() const { return h_; }
  explicit operator bool() const { return h_ != Handle{}; }
  // Destroys the handle now and returns CUDA's answer instead of logging it,
  // for owners that report through their own logger. Empty afterwards.
  [[nodiscard]] cudaError_t Destroy() noexcept {
    if (h_ == Handle{}) return cudaSuccess;
    return Traits::Destroy(std::exchange(h_, Handle{}));
  }
  // Gives the handle up without destroying it, for a handle CUDA cannot
  // destroy safely (ConditionalCapture::body_capture_broken). Empty afterwards.
  [[nodiscard]] Handle Release() noexcept { return std::exchange(h_, Handle{}); }

 private:
  Handle h_{};
};

}  // namespace encore

#endif  // ENCORE_CORE_CUDA_HANDLE_H_
