// SPDX-License-Identifier: Apache-2.0
// Device state that a shim's kernels read and advance in place (Philox's
// offset). A captured graph advances it on every launch, so whoever runs the
// same call a second time (verification's eager re-run) must rewind it
// first, or the re-run draws other numbers than the launch it checks. Shims
// announce such state on each launch; the manager records what a capture's
// body announced (one thread-local load per launch when nobody records).
#ifndef ENCORE_CORE_INTERNAL_DEVICE_STATE_H_
#define ENCORE_CORE_INTERNAL_DEVICE_STATE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace encore {

struct DeviceStateRegion {
  void* data = nullptr;
  size_t bytes = 0;
  std::string what;  // "philox_state"
};

// Called by a shim for each launch that reads and advances `data`.
void NoteDeviceState(void* data, size_t bytes, const char* what);

// While alive, the calling thread's NoteDeviceState calls append to `*out`
// (each region once). Nests: the innermost recorder gets them.
class ScopedDeviceStateRecorder {
 public:
  explicit ScopedDeviceStateRecorder(std::vector<DeviceStateRegion>* out);
  ~ScopedDeviceStateRecorder();
  ScopedDeviceStateRecorder(const ScopedDeviceStateRecorder&) = delete;
  ScopedDeviceStateRecorder& operator=(const ScopedDeviceStateRecorder&) = delete;

 private:
  std::vector<DeviceStateRegion>* outer_;
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_DEVICE_STATE_H_
