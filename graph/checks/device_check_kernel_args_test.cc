// SPDX-License-Identifier: Apache-2.0
// LaunchDeviceCheck's argument checks, which return before any CUDA call.
#include <gtest/gtest.h>

#include "encore/graph/checks/internal/device_check_kernel.h"

namespace encore {
namespace {

// Never dereferenced: the checks reject the call before any launch.
void* const kFakeDevice = reinterpret_cast<void*>(0x1000);
const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(0x2000);

TEST(DeviceCheckKernelArgsTest, NullArguments) {
  bool* cond = static_cast<bool*>(kFakeDevice);
  auto* rec = reinterpret_cast<CheckRecord*>(static_cast<char*>(kFakeDevice) + 64);
  EXPECT_EQ(LaunchDeviceCheck(nullptr, rec, 1, nullptr, 0, false, kStream), cudaErrorInvalidValue);
  EXPECT_EQ(LaunchDeviceCheck(cond, nullptr, 1, nullptr, 0, false, kStream), cudaErrorInvalidValue);
  EXPECT_EQ(LaunchDeviceCheck(nullptr, nullptr, 1, nullptr, 0, true, kStream), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace encore
