// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/checks/internal/device_check_kernel.h"

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

__global__ void DeviceCheckKernel(const unsigned char* cond, CheckRecord* record, int check_id,
                                  const unsigned long long* seq_ptr, long long call_index, bool trap) {
  // volatile: the flag is usually written by an earlier kernel of the same
  // graph; never serve it from a stale cache line.
  if (*reinterpret_cast<const volatile unsigned char*>(cond) != 0) return;
  if (trap) __trap();
  if (atomicCAS(&record->failed, 0, 1) != 0) return;  // the first failure wins
  volatile CheckRecord* r = record;
  r->check_id = check_id;
  if (seq_ptr != nullptr) {
    r->seq = *reinterpret_cast<const volatile unsigned long long*>(seq_ptr);
    r->call_index = -1;
  } else {
    r->seq = 0;
    r->call_index = call_index;
  }
  __threadfence_system();
}

}  // namespace

cudaError_t LaunchDeviceCheck(const bool* cond, CheckRecord* record_device_ptr, int check_id,
                              const unsigned long long* seq_ptr, long long call_index, bool trap,
                              cudaStream_t stream) {
  if (cond == nullptr || (record_device_ptr == nullptr && !trap)) return cudaErrorInvalidValue;
  DeviceCheckKernel<<<1, 1, 0, stream>>>(reinterpret_cast<const unsigned char*>(cond), record_device_ptr, check_id,
                                         seq_ptr, call_index, trap);
  return ::encore::cuda().GetLastError();  // through the fault seam
}

}  // namespace encore
