// SPDX-License-Identifier: Apache-2.0
// The kernel behind Call::Check: checks a device boolean without a host sync.
// In record mode a failure is written to a record in mapped pinned host memory
// (MappedCheckRecord owns one), so the host sees it without a copy and the
// context stays usable; in trap mode it traps like a device assert, which
// poisons the context (for debugging).
#ifndef ENCORE_GRAPH_CHECKS_INTERNAL_DEVICE_CHECK_KERNEL_H_
#define ENCORE_GRAPH_CHECKS_INTERNAL_DEVICE_CHECK_KERNEL_H_

#include <cuda_runtime_api.h>

namespace encore {

// Written by the device, read by the host. `failed` is 0 until a check fails;
// the first failing check sets it to 1 (later ones leave the record alone) and
// then writes the other fields, so read them once the check's work has
// completed (after an event or stream sync), not as soon as `failed` flips.
struct CheckRecord {
  int failed;
  int check_id;
  // *seq_ptr at the failure when the check was given one (a replay's
  // sequence number kept on the device), else 0.
  unsigned long long seq;
  // The call_index given to the launch, or -1 when seq_ptr was given.
  long long call_index;
};

// Queues one single-thread kernel on `stream` that reads *cond (a byte in
// device memory; nonzero is true). If it is false: with `trap`, __trap();
// otherwise records check_id and call_index (or, with seq_ptr, *seq_ptr and
// -1) in *record unless a failure is already recorded, then fences so the
// host sees it. Capturable: no sync, no allocation. cudaErrorInvalidValue
// without launching if cond, or record without trap, is null; else the
// launch's error.
cudaError_t LaunchDeviceCheck(const bool* cond, CheckRecord* record_device_ptr, int check_id,
                              const unsigned long long* seq_ptr, long long call_index, bool trap,
                              cudaStream_t stream);

}  // namespace encore

#endif  // ENCORE_GRAPH_CHECKS_INTERNAL_DEVICE_CHECK_KERNEL_H_
