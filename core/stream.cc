// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/stream.h"

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace internal {
cudaError_t StreamTraits::Destroy(cudaStream_t s) { return cuda().StreamDestroy(s); }
cudaError_t EventTraits::Destroy(cudaEvent_t e) { return cuda().EventDestroy(e); }
}  // namespace internal

StatusOr<Stream> Stream::Create(unsigned flags) {
  cudaStream_t s = nullptr;
  ENCORE_CUDA_CALL(StreamCreateWithFlags, &s, flags);
  return Stream(s);
}

StatusOr<Event> Event::Create(unsigned flags) {
  cudaEvent_t e = nullptr;
  ENCORE_CUDA_CALL(EventCreateWithFlags, &e, flags);
  return Event(e);
}

}  // namespace encore
