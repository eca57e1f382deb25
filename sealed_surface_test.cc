// SPDX-License-Identifier: Apache-2.0
// encore.h brings in the public surface and nothing internal: no spdlog, no
// graph arena or ledger, no EventLog. Each internal header defines its guard,
// so a guard seen here means encore.h included it.
#include "encore/encore.h"

#include <gtest/gtest.h>

#if defined(SPDLOG_H) || defined(SPDLOG_VERSION)
#error "encore/encore.h includes spdlog"
#endif
#if defined(ENCORE_ALLOCATOR_GRAPH_ARENA_H_) || defined(ENCORE_ALLOCATOR_LEDGER_H_)
#error "encore/encore.h includes the graph arena or the ledger"
#endif
#if defined(ENCORE_CORE_LOG_H_)
#error "encore/encore.h includes encore/core/log.h"
#endif

namespace encore {
namespace {

// The names a user types compile from the umbrella header alone.
TEST(SealedSurfaceTest, PublicNamesCompileFromTheUmbrellaHeader) {
  ManagerOptions options;
  options.flags_text = "forward:graphs=off";
  MethodSpec spec;
  spec.name = "forward";
  spec.fn = [](Call&) { return OkStatus(); };
  MethodReport report;
  report.calls = 3;
  EXPECT_NE(report.ToJson().find("\"calls\":3"), std::string::npos);
  EXPECT_EQ(CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc").code(), StatusCode::kResourceExhausted);
  MemoryStats stats;
  EXPECT_EQ(stats.live_bytes, 0u);
}

// Issue 16's names: padding to buckets, Precapture, the graph-memory budget.
TEST(SealedSurfaceTest, ServingNamesCompileFromTheUmbrellaHeader) {
  ManagerOptions options;
  options.graph_memory_budget = size_t{1} << 30;
  MethodFlags flags;
  flags.on_new_shape = ShapePolicy::kPad;
  flags.buckets = {1, 2, 4, 8};
  EXPECT_EQ(BucketsText(flags.buckets), "1|2|4|8");
  MethodReport report;
  report.buckets = {8};
  report.real_rows = 5;
  report.padded_rows = 3;
  report.precaptures = 1;
  report.graph_memory_bytes = 9;
  EXPECT_NE(report.ToJson().find("\"padded_rows\":3"), std::string::npos);
  Status (Method::*precapture)(std::span<const TensorRef>, std::span<const TensorRef>, cudaStream_t) =
      &Method::Precapture;
  EXPECT_NE(precapture, nullptr);
}

}  // namespace
}  // namespace encore
