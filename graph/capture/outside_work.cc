// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/capture/internal/outside_work.h"

#include <chrono>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/device_memory.h"
#include "encore/core/internal/capture_fence.h"
#include "encore/graph/capture/internal/outside_work_kernel.h"

namespace encore {

Status PoisonOutputs(Args static_outputs, cudaStream_t stream) {
  for (const TensorRef& t : static_outputs) {
    if (t.span_bytes() > 0) ENCORE_CUDA_CALL(MemsetAsync, t.data, kOutputPoison, t.span_bytes(), stream);
  }
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  return OkStatus();
}

StatusOr<std::string> WorkOutsideCapture(Args static_outputs, const std::vector<bool>& referenced,
                                         cudaStream_t stream) {
  const size_t first_output = referenced.size() - static_outputs.size();
  bool any = false;
  for (size_t i = 0; i < static_outputs.size(); ++i) any |= !referenced[first_output + i] && static_outputs[i].span_bytes() > 0;
  if (!any) return std::string();
  ENCORE_ASSIGN_OR_RETURN(bool synced, SynchronizeDeviceBetweenCaptures(std::chrono::milliseconds(500)));
  if (!synced) {
    return std::string("no node of the graph refers to an output, and with another capture in flight encore could not "
                       "wait for the device to tell whether the body wrote it on a stream it never joined");
  }
  ENCORE_ASSIGN_OR_RETURN(DeviceMemory counts, DeviceMemory::Allocate(static_outputs.size() * sizeof(unsigned long long)));
  auto* count = counts.as<unsigned long long>();
  ENCORE_CUDA_CALL(MemsetAsync, count, 0, static_outputs.size() * sizeof(unsigned long long), stream);
  for (size_t i = 0; i < static_outputs.size(); ++i) {
    const TensorRef& t = static_outputs[i];
    if (referenced[first_output + i] || t.span_bytes() == 0) continue;
    ENCORE_RETURN_IF_ERROR(LaunchResult(LaunchCountBytesNot(t.data, t.span_bytes(), kOutputPoison, count + i, stream),
                                        "outside-work check kernel"));
  }
  std::vector<unsigned long long> host(static_outputs.size());
  ENCORE_CUDA_CALL(MemcpyAsync, host.data(), count, host.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                   stream);
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  for (size_t i = 0; i < host.size(); ++i) {
    if (host[i] == 0) continue;
    return "the body wrote output " + std::to_string(i) + " outside the capture (no node of the graph refers to it, "
           "yet " + std::to_string(host[i]) + " of its bytes changed while it was captured): it launched work on a "
           "stream it never joined to call.stream(); fork such streams from call.stream() with an event and join them "
           "back";
  }
  return std::string();
}

}  // namespace encore
