// SPDX-License-Identifier: Apache-2.0
// DeviceGuard: makes a device current for a scope, through the fault table.
#ifndef ENCORE_CORE_INTERNAL_DEVICE_GUARD_H_
#define ENCORE_CORE_INTERNAL_DEVICE_GUARD_H_

#include "encore/core/internal/cuda_api.h"

namespace encore {

// Makes `device` current until destroyed, then the caller's device again:
// releasing a device's graphs and memory runs with that device current,
// whatever the caller's is.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cuda().GetDevice(&previous_) == cudaSuccess && previous_ != device) {
      restore_ = cuda().SetDevice(device) == cudaSuccess;
    }
  }
  ~DeviceGuard() {
    if (restore_) (void)cuda().SetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool restore_ = false;
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_DEVICE_GUARD_H_
