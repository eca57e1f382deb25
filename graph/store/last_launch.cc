// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/store/internal/last_launch.h"

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/internal/messages.h"

namespace encore {

Status LastLaunch::Prepare() {
  if (event_) return OkStatus();
  ENCORE_ASSIGN_OR_RETURN(event_, Event::Create());
  return OkStatus();
}

Status LastLaunch::Unknown() const {
  return InternalError(MethodQuoted(*method_) +
                       ": the completion of the last launch was not recorded (cudaEventRecord and "
                       "cudaStreamSynchronize failed after it); nothing launched");
}

Status LastLaunch::JoinOther(cudaStream_t stream) {
  EndCall();
  // The graphs of this method share static buffers and scratch, so work on
  // a new stream waits for the previous launch.
  if (!recorded_) return Unknown();
  ENCORE_CUDA_CALL(StreamWaitEvent, stream, event_.get(), 0);
  stream_ = stream;  // this stream's work now follows the launch
  return OkStatus();
}

Status LastLaunch::Wait() {
  EndCall();
  if (!launched_) return OkStatus();
  if (!recorded_) return Unknown();
  ENCORE_CUDA_CALL(EventSynchronize, event_.get());
  return OkStatus();
}

void LastLaunch::RecordWork(cudaStream_t stream) {
  if (!launched_ || !event_) return;
  pending_ = false;
  stream_ = stream;
  recorded_ = cuda().EventRecord(event_.get(), stream) == cudaSuccess;
  if (recorded_) return;
  ClearCudaError();
  // The launch happened and its result stands. Without the event a later
  // wait would have nothing to wait on: wait now, while the stream exists.
  if (cuda().StreamSynchronize(stream) == cudaSuccess) {
    launched_ = false;  // nothing of this method is in flight
  } else {
    ClearCudaError();
  }
}

}  // namespace encore
