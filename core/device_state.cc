// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/device_state.h"

namespace encore {
namespace {
thread_local std::vector<DeviceStateRegion>* t_recorder = nullptr;
}  // namespace

void NoteDeviceState(void* data, size_t bytes, const char* what) {
  std::vector<DeviceStateRegion>* out = t_recorder;
  if (out == nullptr) return;
  for (const DeviceStateRegion& r : *out) {
    if (r.data == data) return;
  }
  out->push_back(DeviceStateRegion{data, bytes, what});
}

ScopedDeviceStateRecorder::ScopedDeviceStateRecorder(std::vector<DeviceStateRegion>* out) : outer_(t_recorder) {
  t_recorder = out;
}

ScopedDeviceStateRecorder::~ScopedDeviceStateRecorder() { t_recorder = outer_; }

}  // namespace encore
