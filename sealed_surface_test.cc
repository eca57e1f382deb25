// SPDX-License-Identifier: Apache-2.0
// encore.h brings in the public surface and nothing internal: no spdlog, no
// graph arena or ledger, no EventLog, no flags-text parser, no
// ThreadConsensus state. Each internal header defines its guard, so a guard
// seen here means encore.h included it; a type that only encore's own files
// may define must be incomplete here.
#include "encore/encore.h"

#include <gtest/gtest.h>

#include <type_traits>

#if defined(SPDLOG_H) || defined(SPDLOG_VERSION)
#error "encore/encore.h includes spdlog"
#endif
#if defined(ENCORE_ALLOCATOR_INTERNAL_GRAPH_ARENA_H_) || defined(ENCORE_ALLOCATOR_INTERNAL_LEDGER_H_)
#error "encore/encore.h includes the graph arena or the ledger"
#endif
#if defined(ENCORE_CORE_INTERNAL_LOG_H_)
#error "encore/encore.h includes encore/core/internal/log.h"
#endif
#if defined(ENCORE_POLICY_INTERNAL_FLAGS_TEXT_H_) || defined(ENCORE_POLICY_INTERNAL_FLAG_TABLE_H_)
#error "encore/encore.h includes the flags-text parser or the flag table (encore/policy/internal/)"
#endif
#if defined(ENCORE_POLICY_NCCL_CONSENSUS_H_) || defined(ENCORE_INTEROP_NCCL_NCCL_CONSENSUS_H_)
#error "encore/encore.h includes NcclConsensus, which needs NCCL (encore/interop/nccl/)"
#endif

namespace encore {
// Declared again here (a no-op if encore.h declares them, as it does
// ThreadConsensusState), so that the checks below compile either way.
class FlagsText;
struct FlagOverrides;
struct FlagEntry;
struct FlagField;
namespace internal {
struct ThreadConsensusState;
}  // namespace internal

namespace {

// Whether T is defined at this point of this file. Asked once per type, at
// its end, after every header.
template <class T, class = void>
struct IsDefined : std::false_type {};
template <class T>
struct IsDefined<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

static_assert(!IsDefined<FlagsText>::value, "encore/encore.h defines the flags-text parser (FlagsText)");
static_assert(!IsDefined<FlagOverrides>::value && !IsDefined<FlagEntry>::value,
              "encore/encore.h defines the flags-text parser's entries");
static_assert(!IsDefined<FlagField>::value, "encore/encore.h defines the flag table's rows");
static_assert(!IsDefined<internal::ThreadConsensusState>::value,
              "encore/encore.h defines ThreadConsensus's shared state (policy/rank_consensus.cc keeps it)");

}  // namespace
}  // namespace encore

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

// The serving names: padding to buckets, Precapture, the graph-memory budget.
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
