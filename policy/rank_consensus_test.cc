#include "encore/policy/rank_consensus.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace encore {
namespace {

TEST(ThreadConsensusTest, AllTrueAgreesAnyFalseRefusesEveryRank) {
  ThreadConsensus tc(3, std::chrono::milliseconds(5000));
  std::vector<std::vector<bool>> got(3);
  auto rank = [&](int r) {
    auto voter = tc.Rank(r);
    EXPECT_EQ(voter->rank(), r);
    EXPECT_EQ(voter->size(), 3);
    // Round 0: all true. Round 1: rank 2 says no. Round 2: all true again.
    for (int round = 0; round < 3; ++round) {
      bool vote = !(round == 1 && r == 2);
      auto a = voter->AllAgree(vote, "capture");
      ASSERT_TRUE(a.ok()) << a.status();
      got[r].push_back(*a);
    }
  };
  std::thread t0(rank, 0), t1(rank, 1), t2(rank, 2);
  t0.join();
  t1.join();
  t2.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(got[r], (std::vector<bool>{true, false, true})) << "rank " << r;
}

TEST(ThreadConsensusTest, AMissingRankIsADeadlineNotAHang) {
  ThreadConsensus tc(2, std::chrono::milliseconds(50));
  auto only = tc.Rank(0);
  auto a = only->AllAgree(true, "capture of 'forward'");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(a.status().message(), "rank 0: vote on capture of 'forward' timed out after 50 ms waiting for 1 of 2 ranks");
}

TEST(ThreadConsensusTest, SingleRankAgreesWithItself) {
  ThreadConsensus tc(1, std::chrono::milliseconds(10));
  auto v = tc.Rank(0);
  EXPECT_TRUE(*v->AllAgree(true, "x"));
  EXPECT_FALSE(*v->AllAgree(false, "x"));
}

TEST(ThreadConsensusTest, AllMinIsElementWiseAcrossRanks) {
  ThreadConsensus tc(3, std::chrono::milliseconds(5000));
  std::vector<std::vector<uint64_t>> got(3);
  const std::vector<std::vector<uint64_t>> votes = {{5, 1, 9}, {2, 8, 9}, {7, 3, UINT64_MAX}};
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; ++r) {
    ts.emplace_back([&, r] {
      auto m = tc.Rank(r)->AllMin(votes[r], "test");
      ASSERT_TRUE(m.ok()) << m.status();
      got[r] = *m;
    });
  }
  for (auto& t : ts) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(got[r], (std::vector<uint64_t>{2, 1, 9})) << "rank " << r;
}

TEST(ThreadConsensusTest, AllEqualSeesAnyRankThatDiffers) {
  for (uint64_t odd : {uint64_t{42}, uint64_t{41}, uint64_t{43}, uint64_t{0}, UINT64_MAX}) {
    ThreadConsensus tc(3, std::chrono::milliseconds(5000));
    std::vector<int> got(3, -1);
    std::vector<std::thread> ts;
    for (int r = 0; r < 3; ++r) {
      ts.emplace_back([&, r] {
        auto e = tc.Rank(r)->AllEqual(r == 1 ? odd : 42, "flags of 'm'");
        ASSERT_TRUE(e.ok()) << e.status();
        got[r] = *e ? 1 : 0;
      });
    }
    for (auto& t : ts) t.join();
    const int want = odd == 42 ? 1 : 0;
    EXPECT_EQ(got, (std::vector<int>{want, want, want})) << "odd rank passed " << odd;
  }
}

TEST(ThreadConsensusTest, AVoteOfTooManyValuesIsRejectedAndCastsNothing) {
  ThreadConsensus tc(1, std::chrono::milliseconds(10));
  auto v = tc.Rank(0);
  auto m = v->AllMin(std::vector<uint64_t>(RankConsensus::kMaxValues + 1, 0), "capture of 'm'");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "rank 0: vote on capture of 'm' has 5 values, must have 1 to 4");
  EXPECT_FALSE(v->AllMin({}, "x").ok());
  // The rejected votes did not count as a round.
  EXPECT_TRUE(*v->AllAgree(true, "x"));
}

}  // namespace
}  // namespace encore
