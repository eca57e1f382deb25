// Stream and Event owners (move-only RAII) and StreamView, a non-owning view
// of a stream.
#ifndef ENCORE_CORE_STREAM_H_
#define ENCORE_CORE_STREAM_H_

#include <cuda_runtime_api.h>

#include <cstddef>

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

// Owns a non-blocking stream.
class Stream {
 public:
  static StatusOr<Stream> Create(unsigned flags = cudaStreamNonBlocking);
  Stream() = default;
  ~Stream();
  Stream(Stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return s_; }
  StreamView view() const { return StreamView(s_); }
  explicit operator bool() const { return s_ != nullptr; }

 private:
  explicit Stream(cudaStream_t s) : s_(s) {}
  void Reset();
  cudaStream_t s_ = nullptr;
};

// Owns an event; timing is off by default because timing events cost more to
// record and nothing on the replay path needs them.
class Event {
 public:
  static StatusOr<Event> Create(unsigned flags = cudaEventDisableTiming);
  Event() = default;
  ~Event();
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return e_; }
  explicit operator bool() const { return e_ != nullptr; }

 private:
  explicit Event(cudaEvent_t e) : e_(e) {}
  void Reset();
  cudaEvent_t e_ = nullptr;
};

}  // namespace encore

#endif  // ENCORE_CORE_STREAM_H_
