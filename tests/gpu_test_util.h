// SPDX-License-Identifier: Apache-2.0
// GPU tests skip, with the reason, on machines where no device is visible, so
// a GPU test binary run on a CPU machine says why instead of failing.
#ifndef ENCORE_TESTS_GPU_TEST_UTIL_H_
#define ENCORE_TESTS_GPU_TEST_UTIL_H_

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "encore/core/internal/stream.h"

namespace encore::testing {

// Empty when a device is usable, else why not.
inline std::string NoGpuReason() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    return std::string("no CUDA device visible: cudaGetDeviceCount returned ") + cudaGetErrorName(err);
  }
  if (n == 0) return "no CUDA device visible: cudaGetDeviceCount returned 0 devices";
  return {};
}

}  // namespace encore::testing

#define ENCORE_REQUIRE_GPU()                                            \
  do {                                                                  \
    std::string encore_reason_ = ::encore::testing::NoGpuReason();      \
    if (!encore_reason_.empty()) GTEST_SKIP() << encore_reason_;        \
  } while (0)

// Whether the binary runs under compute-sanitizer: tools/gpu_suite.sh sets
// ENCORE_SANITIZER to the tool's name under --memcheck and --racecheck. A
// test's long loop then runs fewer rounds, the same paths, so the binary
// ends within the suite's timeout.
namespace encore::testing {
inline bool UnderSanitizer() {
  const char* tool = std::getenv("ENCORE_SANITIZER");
  return tool != nullptr && *tool != '\0';
}
}  // namespace encore::testing

// compute-sanitizer counts a device trap as an error of the binary, also one
// a test sets off on purpose in a child process; such a test skips under a
// sanitizer, saying why.
#define ENCORE_SKIP_UNDER_SANITIZER(why)                                                            \
  do {                                                                                             \
    if (::encore::testing::UnderSanitizer()) {                                                     \
      GTEST_SKIP() << "under compute-sanitizer " << std::getenv("ENCORE_SANITIZER") << ": " << (why); \
    }                                                                                              \
  } while (0)

// A CUDA call in a test that must succeed.
#define ENCORE_CUDA_ASSERT(call)                                             \
  do {                                                                       \
    cudaError_t encore_e_ = (call);                                          \
    ASSERT_EQ(encore_e_, cudaSuccess) << #call << ": " << cudaGetErrorName(encore_e_); \
  } while (0)

namespace encore::testing {

// A fixture that skips without a GPU and gives each test its own
// non-blocking stream, s().
class GpuStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ENCORE_REQUIRE_GPU();
    auto s = Stream::Create();
    ASSERT_TRUE(s.ok()) << s.status();
    stream_ = std::move(*s);
  }
  cudaStream_t s() const { return stream_.get(); }
  Stream stream_;
};

}  // namespace encore::testing

#endif  // ENCORE_TESTS_GPU_TEST_UTIL_H_
