// SPDX-License-Identifier: Apache-2.0
// IF and WHILE conditional nodes built inside an encore StreamCapture and
// replayed from one executable: an IF follows its device flag launch by
// launch, a WHILE runs its body exactly N times for N read on the device, a
// runaway loop stops at its bound and is recorded with the context left
// usable, conditionals nest 4 deep with exact counts, and the eager
// counterparts give the same answers.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "encore/graph/control/internal/control_gpu_fixture.h"
#include "encore/graph/control/internal/eager_control.h"

namespace encore {
namespace {

using testing::CaptureFn;
using testing::ControlGpuTest;
using testing::LaunchCount;
using testing::LaunchLoopInit;

// Ints: 0 body count, 1 after-count, 2 n, 3 left. Flags: 0 the condition.
constexpr int kCount = 0, kAfter = 1, kN = 2, kLeft = 3;

class ConditionalCaptureGpuTest : public ControlGpuTest {
 protected:
  // LoopInit(n) -> While(flag) { count; step } -> count `after`.
  StatusOr<testing::Captured> CaptureCountdown(int64_t max_iterations) {
    return Capture([&](ConditionalCapture& cc, cudaStream_t st) {
      CTL_LAUNCH(LaunchLoopInit(Int(kN), Int(kLeft), Flag(0), st));
      ENCORE_RETURN_IF_ERROR(cc.AddWhile(st, Flag(0), CountdownBody(kCount, kLeft, 0), max_iterations, 1));
      CTL_LAUNCH(LaunchCount(Int(kAfter), st));
      return OkStatus();
    });
  }
};

TEST_F(ConditionalCaptureGpuTest, IfFollowsItsFlagOnEveryLaunchOfOneExecutable) {
  auto c = Capture([&](ConditionalCapture& cc, cudaStream_t st) {
    ENCORE_RETURN_IF_ERROR(cc.AddIf(st, Flag(0), CountBody(kCount)));
    CTL_LAUNCH(LaunchCount(Int(kAfter), st));
    return OkStatus();
  });
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->conditionals, 1);
  const std::vector<bool> flags = {true, false, true, true, false, false, true};
  int taken = 0;
  for (size_t i = 0; i < flags.size(); ++i) {
    SetFlag(0, flags[i]);
    ASSERT_TRUE(Run(*c).ok());
    taken += flags[i] ? 1 : 0;
    EXPECT_EQ(GetInt(kCount), taken) << "launch " << i;
    EXPECT_EQ(GetInt(kAfter), static_cast<int>(i + 1)) << "launch " << i << ": the work after the If";
  }
  EXPECT_FALSE(record_.pending());
}

TEST_F(ConditionalCaptureGpuTest, WhileRunsATwoKernelBodyExactlyNTimesReadOnTheDevice) {
  auto c = CaptureCountdown(1000);
  ASSERT_TRUE(c.ok()) << c.status();
  for (int n : {0, 1, 3, 7, 64, 3, 0}) {
    ZeroInts();
    SetInt(kN, n);
    ASSERT_TRUE(Run(*c).ok());
    EXPECT_EQ(GetInt(kCount), n) << "N = " << n;
    EXPECT_EQ(GetInt(kLeft), 0) << "N = " << n;
    EXPECT_EQ(GetInt(kAfter), 1) << "N = " << n;
    EXPECT_FALSE(record_.pending()) << "N = " << n;
  }
}

TEST_F(ConditionalCaptureGpuTest, ALoopEndingExactlyAtItsBoundIsNoRunaway) {
  auto c = CaptureCountdown(5);
  ASSERT_TRUE(c.ok()) << c.status();
  SetInt(kN, 5);
  ASSERT_TRUE(Run(*c).ok());
  EXPECT_EQ(GetInt(kCount), 5);
  EXPECT_FALSE(record_.pending());
}

TEST_F(ConditionalCaptureGpuTest, ARunawayLoopStopsAtItsBoundIsRecordedAndTheContextStaysUsable) {
  testing::DeviceBuffer<> seq(sizeof(unsigned long long));
  ASSERT_TRUE(seq.ok());
  const unsigned long long kSeq = 77;
  ASSERT_EQ(testing::Upload(seq.get(), &kSeq, sizeof kSeq), cudaSuccess);
  ControlResources res = Resources();
  res.sequence = seq.as<unsigned long long>();
  auto runaway = Capture(
      [&](ConditionalCapture& cc, cudaStream_t st) {
        return cc.AddWhile(st, Flag(0), CountBody(kCount), 5, 42);
      },
      res);
  ASSERT_TRUE(runaway.ok()) << runaway.status();
  SetFlag(0, true);  // never turned false by the body
  ASSERT_TRUE(Run(*runaway).ok());
  EXPECT_EQ(GetInt(kCount), 5);
  ASSERT_TRUE(record_.pending());
  std::optional<LoopRecord::Runaway> r = record_.Take();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->loop_id, 42);
  EXPECT_EQ(r->bound, 5);
  EXPECT_EQ(r->seq, kSeq);
  EXPECT_FALSE(record_.pending());
  EXPECT_EQ(LoopRunawayError("decode", r->bound, 3).message(),
            "method 'decode': a While loop reached its bound of 5 iterations with its condition still true (call 3)");

  // The context is fine: another graph runs right, and so does this one.
  auto countdown = CaptureCountdown(1000);
  ASSERT_TRUE(countdown.ok()) << countdown.status();
  ZeroInts();
  SetInt(kN, 7);
  ASSERT_TRUE(Run(*countdown).ok());
  EXPECT_EQ(GetInt(kCount), 7);
  ZeroInts();
  SetFlag(0, false);
  ASSERT_TRUE(Run(*runaway).ok());
  EXPECT_EQ(GetInt(kCount), 0);
  EXPECT_FALSE(record_.pending());
  SetFlag(0, true);
  ASSERT_TRUE(Run(*runaway).ok());
  EXPECT_EQ(GetInt(kCount), 5);
  EXPECT_TRUE(record_.pending()) << "a second runaway, after the first was taken";
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Ints and flags of the nesting tests, one set per level.
int NAt(int level) { return 20 + level; }
int LeftAt(int level) { return 24 + level; }
int CountAt(int level) { return 28 + level; }
int FlagAt(int level) { return 8 + level; }

class NestingGpuTest : public ConditionalCaptureGpuTest {
 protected:
  // Level `level`'s loop body: count, a loop one level down (above `depth`),
  // step.
  BodyFn NestedWhile(ConditionalCapture* cc, int level, int depth) {
    return [=, this](cudaStream_t bs) -> Status {
      CTL_LAUNCH(LaunchCount(Int(CountAt(level)), bs));
      if (level + 1 < depth) {
        const int in = level + 1;
        CTL_LAUNCH(LaunchLoopInit(Int(NAt(in)), Int(LeftAt(in)), Flag(FlagAt(in)), bs));
        ENCORE_RETURN_IF_ERROR(cc->AddWhile(bs, Flag(FlagAt(in)), NestedWhile(cc, in, depth), 100, in));
      }
      CTL_LAUNCH(testing::LaunchLoopStep(Int(LeftAt(level)), Flag(FlagAt(level)), bs));
      return OkStatus();
    };
  }
  CaptureFn NestedWhiles(int depth) {
    return [=, this](ConditionalCapture& cc, cudaStream_t st) -> Status {
      CTL_LAUNCH(LaunchLoopInit(Int(NAt(0)), Int(LeftAt(0)), Flag(FlagAt(0)), st));
      return cc.AddWhile(st, Flag(FlagAt(0)), NestedWhile(&cc, 0, depth), 100, 0);
    };
  }
};

TEST_F(NestingGpuTest, WhileInWhileFourDeepCountsExactly) {
  auto c = Capture(NestedWhiles(4));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->max_depth, 4);
  const int n[4] = {2, 3, 2, 2};
  for (int l = 0; l < 4; ++l) SetInt(NAt(l), n[l]);
  ASSERT_TRUE(Run(*c).ok());
  int want = 1;
  for (int l = 0; l < 4; ++l) {
    want *= n[l];
    EXPECT_EQ(GetInt(CountAt(l)), want) << "level " << l;
  }
  EXPECT_FALSE(record_.pending());
}

// While(3) { count; If(A) { count; While(2) { count; If(B) { count } } } }:
// If in While and While in If, 4 deep, every flag combination from one
// executable.
TEST_F(NestingGpuTest, IfInWhileAndWhileInIfFourDeepFollowTheirFlags) {
  auto c = Capture([&](ConditionalCapture& cc, cudaStream_t st) -> Status {
    CTL_LAUNCH(LaunchLoopInit(Int(NAt(0)), Int(LeftAt(0)), Flag(FlagAt(0)), st));
    auto level4 = CountBody(CountAt(3));
    auto level3 = [&](cudaStream_t bs) -> Status {
      CTL_LAUNCH(LaunchCount(Int(CountAt(2)), bs));
      ENCORE_RETURN_IF_ERROR(cc.AddIf(bs, Flag(1), level4));
      CTL_LAUNCH(testing::LaunchLoopStep(Int(LeftAt(2)), Flag(FlagAt(2)), bs));
      return OkStatus();
    };
    auto level2 = [&](cudaStream_t bs) -> Status {
      CTL_LAUNCH(LaunchCount(Int(CountAt(1)), bs));
      CTL_LAUNCH(LaunchLoopInit(Int(NAt(2)), Int(LeftAt(2)), Flag(FlagAt(2)), bs));
      return cc.AddWhile(bs, Flag(FlagAt(2)), level3, 100, 2);
    };
    auto level1 = [&](cudaStream_t bs) -> Status {
      CTL_LAUNCH(LaunchCount(Int(CountAt(0)), bs));
      ENCORE_RETURN_IF_ERROR(cc.AddIf(bs, Flag(0), level2));
      CTL_LAUNCH(testing::LaunchLoopStep(Int(LeftAt(0)), Flag(FlagAt(0)), bs));
      return OkStatus();
    };
    return cc.AddWhile(st, Flag(FlagAt(0)), level1, 100, 0);
  });
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->max_depth, 4);
  EXPECT_EQ(c->conditionals, 4);
  for (auto [a, b] : std::vector<std::pair<bool, bool>>{{true, true}, {true, false}, {false, true}, {true, true}}) {
    ZeroInts();
    SetInt(NAt(0), 3);
    SetInt(NAt(2), 2);
    SetFlag(0, a);
    SetFlag(1, b);
    ASSERT_TRUE(Run(*c).ok());
    EXPECT_EQ(GetInt(CountAt(0)), 3) << a << b;
    EXPECT_EQ(GetInt(CountAt(1)), a ? 3 : 0) << a << b;
    EXPECT_EQ(GetInt(CountAt(2)), a ? 6 : 0) << a << b;
    EXPECT_EQ(GetInt(CountAt(3)), a && b ? 6 : 0) << a << b;
  }
}

TEST_F(NestingGpuTest, NestingDeeperThanThePoolIsRefusedAndLeavesNothingCapturing) {
  BodyStreamPool shallow;
  ASSERT_TRUE(shallow.Prepare(2).ok());
  ControlResources res = Resources();
  res.streams = &shallow;
  auto c = Capture(NestedWhiles(3), res);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted) << c.status();
  EXPECT_NE(c.status().message().find("2 levels"), std::string_view::npos) << c.status();
  ExpectNothingCapturing();
  for (int level = 0; level < 2; ++level) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    EXPECT_EQ(cudaStreamIsCapturing(*shallow.At(level), &st), cudaSuccess);
    EXPECT_EQ(st, cudaStreamCaptureStatusNone);
  }
  auto ok = Capture(NestedWhiles(3));
  ASSERT_TRUE(ok.ok()) << ok.status();
  for (int l = 0; l < 3; ++l) SetInt(NAt(l), 2);
  ASSERT_TRUE(Run(*ok).ok());
  EXPECT_EQ(GetInt(CountAt(2)), 8);
}

}  // namespace
}  // namespace encore
