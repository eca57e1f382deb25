#include "encore/policy/rank_consensus.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace encore
