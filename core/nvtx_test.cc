// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/nvtx.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

namespace encore {
namespace {

TEST(NvtxTest, RangeNamesAreMethodColonPhase) {
  EXPECT_EQ(NvtxRangeName("forward", NvtxRange::kWarmup), "forward:warmup");
  EXPECT_EQ(NvtxRangeName("forward", NvtxRange::kCapture), "forward:capture");
  EXPECT_EQ(NvtxRangeName("forward", NvtxRange::kReplay), "forward:replay");
  EXPECT_EQ(NvtxRangeName("forward", NvtxRange::kEager), "forward:eager");
  EXPECT_EQ(NvtxRangeName("forward", NvtxRange::kVerify), "forward:verify");
  EXPECT_EQ(NvtxRangeName("forward", NvtxRange::kPrecapture), "forward:precapture");
  EXPECT_EQ(NvtxRangeName("decode", NvtxRange::kCaptureRecord), "decode:capture:record");
  EXPECT_EQ(NvtxRangeName("decode", NvtxRange::kCaptureInstantiate), "decode:capture:instantiate");
  EXPECT_EQ(NvtxRangeName("decode", NvtxRange::kCaptureUpdate), "decode:capture:update");
  EXPECT_EQ(NvtxRangeName("decode", NvtxRange::kCaptureFirstLaunch), "decode:capture:first_launch");
  EXPECT_EQ(kNvtxDomain, "encore");
}

TEST(NvtxTest, EveryRangeHasItsOwnName) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(NvtxRange::kCount); ++i) {
    std::string_view s = NvtxRangeSuffix(static_cast<NvtxRange>(i));
    EXPECT_NE(s, "unknown") << i;
    names.insert(std::string(s));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(NvtxRange::kCount));
}

// This binary links no libnvToolsExt (NVTX3 is header-only); with no
// profiler attached the domain is null, nothing is registered and a scope
// calls nothing.
TEST(NvtxTest, WithoutAProfilerNothingIsRegisteredOrPushed) {
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) GTEST_SKIP() << "a profiler is attached";
  EXPECT_EQ(NvtxDomain(), nullptr);
  NvtxMethodRanges ranges("forward");
  EXPECT_EQ(ranges.domain(), nullptr);
  for (int i = 0; i < static_cast<int>(NvtxRange::kCount); ++i) {
    EXPECT_EQ(ranges.name(static_cast<NvtxRange>(i)), nullptr);
  }
  for (int i = 0; i < 1000; ++i) {
    NvtxScope scope(ranges, NvtxRange::kReplay);
  }
}

}  // namespace
}  // namespace encore
