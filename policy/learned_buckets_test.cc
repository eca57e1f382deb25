// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/learned_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace encore {
namespace {

// Every subset of the distinct batches (plus top) of at most k buckets,
// ending at top: the programme's answer must match the best of them.
int64_t BruteForce(const std::vector<BatchCount>& hist, int k, int64_t top) {
  std::vector<int64_t> points;
  for (const BatchCount& h : hist) points.push_back(h.batch);
  if (points.back() < top) points.push_back(top);
  const int n = static_cast<int>(points.size());
  int64_t best = INT64_MAX;
  for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
    std::vector<int64_t> b;
    for (int i = 0; i < n - 1; ++i) {
      if (mask & (1u << i)) b.push_back(points[i]);
    }
    b.push_back(top);
    if (static_cast<int>(b.size()) > k) continue;
    best = std::min(best, CostOf(hist, b).padded_rows);
  }
  return best;
}

TEST(ChooseBucketsTest, MatchesBruteForceOnRandomHistograms) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int distinct = 1 + static_cast<int>(rng() % 12);
    std::vector<int64_t> sizes;
    while (static_cast<int>(sizes.size()) < distinct) {
      int64_t b = 1 + static_cast<int64_t>(rng() % 300);
      if (std::find(sizes.begin(), sizes.end(), b) == sizes.end()) sizes.push_back(b);
    }
    std::sort(sizes.begin(), sizes.end());
    std::vector<BatchCount> hist;
    for (int64_t b : sizes) hist.push_back({b, 1 + static_cast<int64_t>(rng() % 50)});
    const int k = 1 + static_cast<int>(rng() % 6);
    const int64_t top = sizes.back() + static_cast<int64_t>(rng() % 3) * 7;
    BucketChoice c = ChooseBuckets(hist, k, top);
    ASSERT_FALSE(c.buckets.empty());
    EXPECT_LE(static_cast<int>(c.buckets.size()), k);
    EXPECT_EQ(c.buckets.back(), top);
    EXPECT_TRUE(std::is_sorted(c.buckets.begin(), c.buckets.end()));
    EXPECT_EQ(c.padded_rows, CostOf(hist, c.buckets).padded_rows) << "trial " << trial;
    EXPECT_EQ(CostOf(hist, c.buckets).uncovered_calls, 0);
    EXPECT_EQ(c.padded_rows, BruteForce(hist, k, top)) << "trial " << trial;
  }
}

TEST(ChooseBucketsTest, ExactFitWhenBucketsAreEnough) {
  std::vector<BatchCount> hist = {{3, 5}, {7, 1}, {20, 9}};
  BucketChoice c = ChooseBuckets(hist, 6, 20);
  EXPECT_EQ(c.buckets, (std::vector<int64_t>{3, 7, 20}));
  EXPECT_EQ(c.padded_rows, 0);
  // One bucket: everything pads to the top.
  c = ChooseBuckets(hist, 1, 24);
  EXPECT_EQ(c.buckets, std::vector<int64_t>{24});
  EXPECT_EQ(c.padded_rows, 5 * 21 + 1 * 17 + 9 * 4);
  EXPECT_TRUE(ChooseBuckets({}, 4, 8).buckets.empty());
}

TEST(ChooseBucketsTest, ManyDistinctBatchesStayFastAndCovered) {
  std::vector<BatchCount> hist;
  for (int64_t b = 1; b <= 5000; ++b) hist.push_back({b, 1 + (b % 7)});
  BucketChoice c = ChooseBuckets(hist, 6, 5000);
  ASSERT_EQ(c.buckets.size(), 6u);
  EXPECT_EQ(c.buckets.back(), 5000);
  EXPECT_EQ(CostOf(hist, c.buckets).uncovered_calls, 0);
  EXPECT_EQ(c.padded_rows, CostOf(hist, c.buckets).padded_rows);
  // Near-uniform weights: six evenly spread buckets pad about 1/12 of 5000
  // per call; the candidates' coarser grid may lose a little of that.
  EXPECT_LT(c.padded_rows, 1.1 * (5000.0 / 12.0) * 20000);
}

TEST(TopBucketForTest, RoundsUpByAtMostAnEighth) {
  EXPECT_EQ(TopBucketFor(1), 1);
  EXPECT_EQ(TopBucketFor(8), 8);
  EXPECT_EQ(TopBucketFor(9), 9);
  EXPECT_EQ(TopBucketFor(100), 104);
  EXPECT_EQ(TopBucketFor(243), 256);
  EXPECT_EQ(TopBucketFor(256), 256);
  EXPECT_EQ(TopBucketFor(257), 288);
  for (int64_t b = 1; b < 5000; ++b) {
    EXPECT_GE(TopBucketFor(b), b);
    EXPECT_LE(TopBucketFor(b), b + b / 8 + 1) << b;
  }
}

TEST(BucketLearnerTest, FirstChoiceAfterFirstReviewCoversEverythingSeen) {
  BucketLearner l(3);
  for (int i = 0; i < 31; ++i) {
    l.Observe(i % 2 ? 5 : 60, false);
    EXPECT_FALSE(l.review_due()) << i;
  }
  l.Observe(17, false);
  ASSERT_TRUE(l.review_due());
  auto c = l.Review({});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (std::vector<int64_t>{5, 17, 60}));
  EXPECT_FALSE(l.review_due());
  EXPECT_EQ(l.next_review(), 32 + 64);
  // The same workload again: the choice stands.
  for (int i = 0; i < 64; ++i) l.Observe(i % 3 == 0 ? 17 : (i % 2 ? 5 : 60), true);
  ASSERT_TRUE(l.review_due());
  EXPECT_FALSE(l.Review(*c).has_value());
  EXPECT_EQ(l.next_review(), 96 + 128);
}

TEST(BucketLearnerTest, AnUncoveredBatchBringsTheReviewForward) {
  BucketLearner l(2);
  for (int i = 0; i < 32; ++i) l.Observe(4, false);
  std::vector<int64_t> cur = *l.Review({});
  EXPECT_EQ(cur, std::vector<int64_t>{4});
  for (int i = 0; i < 5; ++i) l.Observe(4, true);
  EXPECT_FALSE(l.review_due());
  l.Observe(40, false);  // above every bucket
  EXPECT_FALSE(l.review_due());  // not within min_gap (16) of the last review
  for (int i = 0; i < 9; ++i) l.Observe(4, true);
  EXPECT_FALSE(l.review_due());
  l.Observe(4, true);
  EXPECT_TRUE(l.review_due());  // call 48 = last review (32) + 16
  auto c = l.Review(cur);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (std::vector<int64_t>{4, 40}));
}

TEST(BucketLearnerTest, SmallGainsDoNotRecapture) {
  BucketLearner l(2);
  for (int i = 0; i < 32; ++i) l.Observe(i < 16 ? 10 : 100, false);
  std::vector<int64_t> cur = *l.Review({});
  EXPECT_EQ(cur, (std::vector<int64_t>{10, 104}));  // the top rounded up (TopBucketFor)
  // A few 50s: buckets {50, 104} would pad the 10s by 40 each instead of
  // the 50s by 54 each; no gain worth a recapture.
  for (int i = 0; i < 64; ++i) l.Observe(i % 4 == 0 ? 50 : (i % 2 ? 10 : 100), true);
  EXPECT_FALSE(l.Review(cur).has_value());
}

// A workload that flips between two distributions every 100 calls never
// makes the learner recapture more than once per review, and reviews slow
// to one per max_interval calls.
TEST(BucketLearnerTest, AShiftingWorkloadDoesNotThrash) {
  BucketLearner l(4);
  std::vector<int64_t> cur;
  int changes = 0;
  std::mt19937 rng(3);
  const int kCalls = 100000;
  for (int i = 0; i < kCalls; ++i) {
    const bool phase = (i / 100) % 2;
    const int64_t b = phase ? 1 + rng() % 8 : 100 + rng() % 28;
    l.Observe(b, !cur.empty() && b <= cur.back());
    if (l.review_due()) {
      if (auto c = l.Review(cur)) {
        cur = *c;
        ++changes;
      }
    }
  }
  EXPECT_LE(changes, 8);
  EXPECT_LE(cur.size(), 4u);
  EXPECT_GE(cur.back(), 127);
}

TEST(BucketLearnerTest, DecayFollowsAWorkloadThatMoved) {
  BucketLearner::Options o;
  o.window = 1000;
  BucketLearner l(1, o);
  std::vector<int64_t> cur;
  auto run = [&](int64_t b, int n) {
    for (int i = 0; i < n; ++i) {
      l.Observe(b, !cur.empty() && b <= cur.back());
      if (l.review_due()) {
        if (auto c = l.Review(cur)) cur = *c;
      }
    }
  };
  run(64, 3000);
  EXPECT_EQ(cur, std::vector<int64_t>{64});
  // Everything after is smaller; the top bucket stays to cover the largest
  // seen, one bucket only: nothing to change.
  run(8, 20000);
  EXPECT_EQ(cur, std::vector<int64_t>{64});
  EXPECT_EQ(l.max_batch(), 64);
  int64_t total = 0;
  for (const BatchCount& h : l.Histogram()) total += h.count;
  EXPECT_LE(total, o.window + o.max_interval);
}

TEST(BucketLearnerTest, LargeBatchesGoToTheSparseHistogram) {
  BucketLearner l(2);
  l.Observe(3, false);
  l.Observe(100000, false);
  l.Observe(100000, false);
  EXPECT_EQ(l.Histogram(), (std::vector<BatchCount>{{3, 1}, {100000, 2}}));
  l.Reset();
  EXPECT_TRUE(l.Histogram().empty());
  EXPECT_EQ(l.observed(), 0);
}

}  // namespace
}  // namespace encore
