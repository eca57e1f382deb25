// SPDX-License-Identifier: Apache-2.0
// Never slower than eager: the max_padding rule and the measured decision
// (policy/internal/padding_cost.h).
#include "encore/policy/internal/padding_cost.h"

#include <gtest/gtest.h>

namespace encore {
namespace {

TEST(PaddingBeyondLimitTest, ExactlyMoreThanMaxPaddingTimesTheBatch) {
  EXPECT_FALSE(PaddingBeyondLimit(0, 1, 64));  // unset: never by this rule
  EXPECT_TRUE(PaddingBeyondLimit(2, 3, 8));    // 8 > 6
  EXPECT_FALSE(PaddingBeyondLimit(2, 4, 8));   // 8 = 8: not more
  EXPECT_FALSE(PaddingBeyondLimit(2, 5, 8));
  EXPECT_TRUE(PaddingBeyondLimit(1, 7, 8));    // 1: only a full bucket replays
  EXPECT_FALSE(PaddingBeyondLimit(1, 8, 8));
  EXPECT_TRUE(PaddingBeyondLimit(1.5, 5, 8));  // 8 > 7.5
  EXPECT_FALSE(PaddingBeyondLimit(1.6, 5, 8));
}

// Samples t = a + c * b at several sizes: the fit finds a and c.
TEST(MeasuredPaddingTest, FitsAFixedCostAndACostPerRow) {
  MeasuredPadding cost;
  EXPECT_FALSE(cost.EagerUs(4).has_value());
  for (int i = 0; i < 4; ++i) {
    for (int64_t b : {1, 8, 32}) cost.AddEager(b, 40.0 + 2.0 * static_cast<double>(b));
  }
  ASSERT_TRUE(cost.EagerUs(4).has_value());
  EXPECT_NEAR(*cost.EagerUs(4), 48.0, 1e-6);
  EXPECT_NEAR(*cost.EagerUs(100), 240.0, 1e-6);
}

// One size only: the cost per row, no fixed part (an underestimate for
// fewer rows, which the first eager run of such a call corrects).
TEST(MeasuredPaddingTest, OneBatchSizeGivesTheCostPerRow) {
  MeasuredPadding cost;
  for (int i = 0; i < 3; ++i) cost.AddEager(32, 320.0);
  EXPECT_NEAR(*cost.EagerUs(1), 10.0, 1e-9);
  for (int i = 0; i < 3; ++i) cost.AddReplay(64, 30.0);
  EXPECT_TRUE(cost.EagerIsFaster(1, 64));  // 30 > 10: eager, timed...
  cost.AddEager(1, 300.0);                 // ...and it was all fixed cost
  EXPECT_FALSE(cost.EagerIsFaster(1, 64));
  EXPECT_GT(*cost.EagerUs(1), 30.0);
}

TEST(MeasuredPaddingTest, DecidesNothingBeforeEnoughSamples) {
  MeasuredPadding cost;
  cost.AddReplay(64, 1000.0);
  cost.AddReplay(64, 1000.0);
  for (int i = 0; i < 5; ++i) cost.AddEager(1, 10.0);
  EXPECT_FALSE(cost.EagerIsFaster(1, 64));  // two replay samples
  cost.AddReplay(64, 1000.0);
  EXPECT_TRUE(cost.EagerIsFaster(1, 64));
  EXPECT_FALSE(cost.EagerIsFaster(1, 32));  // never measured
  MeasuredPadding no_eager;
  for (int i = 0; i < 5; ++i) no_eager.AddReplay(64, 1000.0);
  EXPECT_FALSE(no_eager.EagerIsFaster(1, 64));
}

// A device-bound body: eager time grows with the rows, a padded replay runs
// the bucket's rows. Small batches in a large bucket go eager, large ones
// replay; a small bucket's replay always wins over its fixed eager cost.
TEST(MeasuredPaddingTest, ComparesTheBucketsReplayWithTheCallsRows) {
  MeasuredPadding cost;
  for (int i = 0; i < 3; ++i) {
    for (int64_t b : {2, 16, 64}) cost.AddEager(b, 20.0 + 10.0 * static_cast<double>(b));
  }
  for (int i = 0; i < 3; ++i) {
    cost.AddReplay(64, 5.0 + 10.0 * 64);
    cost.AddReplay(4, 5.0 + 10.0 * 4);
  }
  EXPECT_TRUE(cost.EagerIsFaster(10, 64));   // 645 > 120
  EXPECT_TRUE(cost.EagerIsFaster(60, 64));   // 645 > 620
  EXPECT_FALSE(cost.EagerIsFaster(63, 64));  // 645 < 650
  EXPECT_FALSE(cost.EagerIsFaster(3, 4));    // 45 < 50
}

// Negative fits are clamped: more rows never cost less, and there is no
// negative fixed cost.
TEST(MeasuredPaddingTest, ClampsFitsThatWouldGoNegative) {
  MeasuredPadding falling;
  for (int i = 0; i < 3; ++i) {
    falling.AddEager(1, 100.0);
    falling.AddEager(50, 60.0);
  }
  EXPECT_NEAR(*falling.EagerUs(25), 80.0, 2.0);  // flat at the (weighted) mean
  EXPECT_DOUBLE_EQ(*falling.EagerUs(1000), *falling.EagerUs(25));
  MeasuredPadding steep;
  for (int i = 0; i < 3; ++i) {
    steep.AddEager(10, 10.0);
    steep.AddEager(20, 40.0);
  }
  EXPECT_DOUBLE_EQ(*steep.EagerUs(0), 0.0);  // through the origin
  EXPECT_NEAR(*steep.EagerUs(20) / *steep.EagerUs(10), 2.0, 1e-9);
}

TEST(MeasuredPaddingTest, SamplesTheFirstCallsThenOneInKSampleEvery) {
  MeasuredPadding cost;
  int timed = 0;
  for (int i = 0; i < 8 + 64; ++i) timed += cost.WantReplaySample(16) ? 1 : 0;
  EXPECT_EQ(timed, 8 + 2);  // the 8 first, then calls 32 and 64
  EXPECT_TRUE(cost.WantReplaySample(8));  // another bucket starts afresh
  MeasuredPadding eager;
  timed = 0;
  for (int i = 0; i < 8 + 64; ++i) {
    const bool want = eager.WantEagerSample(5);
    if (want) eager.AddEager(5, 50.0);
    timed += want ? 1 : 0;
  }
  EXPECT_EQ(timed, 8 + 2);
  // A batch size not timed lately is timed at once.
  EXPECT_TRUE(eager.WantEagerSample(7));
}

TEST(MeasuredPaddingTest, AReplayIsTheLowerMedianOfItsLastSamplesAndFollowsChange) {
  MeasuredPadding cost;
  for (int i = 0; i < 3; ++i) cost.AddReplay(8, 10.0 + i);
  EXPECT_NEAR(*cost.ReplayUs(8), 11.0, 1e-9);
  for (int i = 0; i < 200; ++i) cost.AddReplay(8, 50.0);
  EXPECT_NEAR(*cost.ReplayUs(8), 50.0, 1e-3);
}

// Replays that paid once (an executable instantiated inside the span, its
// upload) are fewer than half of the last samples: the bucket's time is
// what its other replays take, and a replay that really got slower shows
// once most samples say so.
TEST(MeasuredPaddingTest, ReplaysThatPaidOnceDoNotSetTheBucketsTime) {
  MeasuredPadding cost;
  for (double us : {90.0, 600.0, 95.0, 590.0}) cost.AddReplay(64, us);
  EXPECT_NEAR(*cost.ReplayUs(64), 95.0, 1e-9);
  for (int i = 0; i < 3; ++i) cost.AddEager(1 + 30 * i, 190.0);
  EXPECT_FALSE(cost.EagerIsFaster(1, 64));
  for (int i = 0; i < 5; ++i) cost.AddReplay(64, 400.0);
  EXPECT_NEAR(*cost.ReplayUs(64), 400.0, 1e-9);
  EXPECT_TRUE(cost.EagerIsFaster(1, 64));
}

// A bucket measured slower than eager runs its calls eagerly, which time
// no replay of it; one in kSampleEvery of them replays instead, timed
// whatever the replay sampling says, so a time measured too high is
// corrected and the calls replay again.
TEST(MeasuredPaddingTest, ABucketSentEagerlyIsStillTimed) {
  MeasuredPadding cost;
  for (int i = 0; i < 3; ++i) cost.AddEager(1 + 30 * i, 190.0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cost.WantReplaySample(64));
    cost.AddReplay(64, 1000.0);
  }
  for (int i = 0; i < 64; ++i) (void)cost.WantReplaySample(64);  // replays of full calls, past the first samples
  int eager = 0;
  for (int i = 0; i < MeasuredPadding::kSampleEvery - 1; ++i) eager += cost.RunEagerly(2, 64) ? 1 : 0;
  EXPECT_EQ(eager, MeasuredPadding::kSampleEvery - 1);
  EXPECT_FALSE(cost.RunEagerly(2, 64));  // the one that replays...
  EXPECT_TRUE(cost.WantReplaySample(64));  // ...and is timed
  EXPECT_TRUE(cost.EagerIsFaster(2, 64));  // the decision itself is unchanged
  for (int i = 0; i < 4; ++i) cost.AddReplay(64, 90.0);
  EXPECT_FALSE(cost.RunEagerly(2, 64));
  EXPECT_FALSE(cost.EagerIsFaster(2, 64));
}

TEST(MeasuredPaddingTest, KeepBucketsForgetsTheOthers) {
  MeasuredPadding cost;
  for (int i = 0; i < 3; ++i) {
    cost.AddReplay(8, 10.0);
    cost.AddReplay(16, 20.0);
  }
  cost.KeepBuckets({4, 16});
  EXPECT_FALSE(cost.ReplayUs(8).has_value());
  EXPECT_NEAR(*cost.ReplayUs(16), 20.0, 1e-9);
}

}  // namespace
}  // namespace encore
