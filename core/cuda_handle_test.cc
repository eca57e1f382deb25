// SPDX-License-Identifier: Apache-2.0
// A handle whose destroy fails logs to the logger of the LogScope its owner
// opened (the application's), not to the process-wide "encore" logger.
#include "encore/core/cuda_handle.h"

#include <gtest/gtest.h>

#include "encore/core/internal/log.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

struct FailingTraits {
  using Handle = int*;
  static cudaError_t Destroy(Handle) { return cudaErrorInvalidResourceHandle; }
  static constexpr std::string_view kWhat = "test_handle";
};

TEST(CudaHandleLogTest, AFailedDestroyGoesToTheScopesLoggerWithTheMethod) {
  static int dummy = 0;
  LogCapture app;
  EventLog log(app.logger(), LogFormat::kKeyValue);
  {
    LogScope scope(&log, "forward");
    CudaHandle<FailingTraits> h(&dummy);
  }
  auto e = app.Find("destroy_failed");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->level, spdlog::level::err);
  EXPECT_EQ(e->field("method"), "forward");
  EXPECT_EQ(e->field("what"), "test_handle");
  EXPECT_EQ(e->field("error"), "cudaErrorInvalidResourceHandle");
}

TEST(CudaHandleLogTest, WithoutAScopeTheDefaultLoggerGetsIt) {
  static int dummy = 0;
  LogCapture app;
  EventLog log(app.logger(), LogFormat::kKeyValue);
  LogCapture fallback(DefaultLogger());
  { CudaHandle<FailingTraits> h(&dummy); }
  EXPECT_EQ(app.Count("destroy_failed"), 0);
  EXPECT_EQ(fallback.Count("destroy_failed"), 1);
}

}  // namespace
}  // namespace encore
