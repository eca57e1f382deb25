#include "encore/core/stream.h"

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/log.h"

namespace encore {

StatusOr<Stream> Stream::Create(unsigned flags) {
  cudaStream_t s = nullptr;
  ENCORE_CUDA_CALL(StreamCreateWithFlags, &s, flags);
  return Stream(s);
}

Stream::~Stream() { Reset(); }

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    Reset();
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

void Stream::Reset() {
  if (!s_) return;
  cudaError_t err = cuda().StreamDestroy(s_);
  if (err != cudaSuccess) {
    EventLog().Error("destroy_failed", {{"what", "stream"}, {"error", cudaGetErrorName(err)}});
  }
  s_ = nullptr;
}

StatusOr<Event> Event::Create(unsigned flags) {
  cudaEvent_t e = nullptr;
  ENCORE_CUDA_CALL(EventCreateWithFlags, &e, flags);
  return Event(e);
}

Event::~Event() { Reset(); }

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    Reset();
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

void Event::Reset() {
  if (!e_) return;
  cudaError_t err = cuda().EventDestroy(e_);
  if (err != cudaSuccess) {
    EventLog().Error("destroy_failed", {{"what", "event"}, {"error", cudaGetErrorName(err)}});
  }
  e_ = nullptr;
}

}  // namespace encore
