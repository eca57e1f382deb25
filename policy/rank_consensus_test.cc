// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/rank_consensus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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

TEST(ThreadConsensusTest, ARankOutsideTheGroupIsRefusedAndVotesNothing) {
  ThreadConsensus tc(2, std::chrono::milliseconds(5000));
  for (int r : {-1, 2, 7}) {
    StatusOr<std::vector<uint64_t>> v = tc.Rank(r)->AllMin({1}, "x");
    ASSERT_FALSE(v.ok()) << r;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(v.status().message().find("rank " + std::to_string(r) + " is not one of the group's ranks (0 to 1)"),
              std::string::npos)
        << v.status();
  }
  // Nothing was counted: the two real ranks still agree.
  StatusOr<std::vector<uint64_t>> a = InternalError("rank 0 did not vote");
  std::thread t([&] { a = tc.Rank(0)->AllMin({5}, "x"); });
  StatusOr<std::vector<uint64_t>> b = tc.Rank(1)->AllMin({3}, "x");
  t.join();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, std::vector<uint64_t>{3});
  EXPECT_EQ(*b, std::vector<uint64_t>{3});
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

// ---- Methods that vote at once

// Two methods ('a', 'b') on two threads of each of two ranks, `rounds` votes
// each. Rank r votes k * 100 + m * 10 + (r + m) % 2 in round k of method m,
// so the right minimum is k * 100 + m * 10 and any pairing across methods
// or rounds gives another number.
TEST(ThreadConsensusConcurrencyTest, TwoMethodsOnTwoThreadsPerRankPairByMethod) {
  constexpr int kRanks = 2, kMethods = 2, kRounds = 200;
  ThreadConsensus tc(kRanks, std::chrono::milliseconds(20000));
  std::vector<std::shared_ptr<RankConsensus>> voters = {tc.Rank(0), tc.Rank(1)};
  std::vector<std::vector<int>> wrong(kRanks, std::vector<int>(kMethods, 0));
  std::vector<std::vector<std::string>> errors(kRanks, std::vector<std::string>(kMethods));
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    for (int m = 0; m < kMethods; ++m) {
      threads.emplace_back([&, r, m] {
        const std::string what = std::string("capture of '") + "ab"[m] + "'";
        for (uint64_t k = 0; k < kRounds; ++k) {
          auto got = voters[r]->AllMin({k * 100 + m * 10 + (r + m) % 2, k}, what);
          if (!got.ok()) {
            errors[r][m] = std::string(got.status().message());
            return;
          }
          if (*got != std::vector<uint64_t>{k * 100 + m * 10, k}) ++wrong[r][m];
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    for (int m = 0; m < kMethods; ++m) {
      EXPECT_EQ(errors[r][m], "") << "rank " << r << " method " << m;
      EXPECT_EQ(wrong[r][m], 0) << "rank " << r << " method " << m;
    }
  }
}

TEST(ThreadConsensusConcurrencyTest, AMismatchedPairingIsAnErrorOnBothRanks) {
  // Rank 0 votes on 'a' while rank 1 votes on 'b': neither may take the
  // other's vote as its own.
  ThreadConsensus tc(2, std::chrono::milliseconds(200));
  std::vector<Status> got(2);
  const auto start = std::chrono::steady_clock::now();
  std::thread t0([&] { got[0] = tc.Rank(0)->AllAgree(true, "capture of 'a'").status(); });
  std::thread t1([&] { got[1] = tc.Rank(1)->AllAgree(true, "capture of 'b'").status(); });
  t0.join();
  t1.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(got[r].ok()) << "rank " << r;
    EXPECT_TRUE(got[r].code() == StatusCode::kDeadlineExceeded || got[r].code() == StatusCode::kFailedPrecondition)
        << got[r];
  }
  // The group is out of step: later votes fail at once.
  EXPECT_EQ(tc.Rank(0)->AllAgree(true, "capture of 'a'").status().code(), StatusCode::kFailedPrecondition);
}

TEST(ThreadConsensusConcurrencyTest, ARankInARoundAlreadyJoinsTheNextOne) {
  // Rank 0 votes twice at once on one decision (the method on two devices);
  // rank 1 votes twice in turn. Each round takes one vote of each rank.
  ThreadConsensus tc(2, std::chrono::milliseconds(20000));
  auto r0 = tc.Rank(0), r1 = tc.Rank(1);
  std::vector<uint64_t> got0(2), got1(2);
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i) {
    ts.emplace_back([&, i] {
      auto m = r0->AllMin({i == 0 ? 5u : 7u}, "capture of 'm'");
      ASSERT_TRUE(m.ok()) << m.status();
      got0[i] = (*m)[0];
    });
  }
  ts.emplace_back([&] {
    // Let both of rank 0's votes arrive first, so that they meet.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int i = 0; i < 2; ++i) {
      auto m = r1->AllMin({i == 0 ? 6u : 8u}, "capture of 'm'");
      ASSERT_TRUE(m.ok()) << m.status();
      got1[i] = (*m)[0];
    }
  });
  for (auto& t : ts) t.join();
  // Rank 0's 5 and 7 went to different rounds, in either order: {5, 7}
  // against {6, 8}, or {7, 5}.
  std::sort(got0.begin(), got0.end());
  std::sort(got1.begin(), got1.end());
  EXPECT_EQ(got0, got1);
  EXPECT_TRUE(got0 == (std::vector<uint64_t>{5, 7}) || got0 == (std::vector<uint64_t>{5, 6}))
      << got0[0] << "," << got0[1];
}

// Pairs the k-th vote of every rank whatever it is about, as NCCL pairs the
// k-th collective on a communicator, and tags votes as NcclConsensus does.
class InOrderConsensus : public RankConsensus {
 public:
  struct Exchange {
    std::mutex mu;
    std::condition_variable cv;
    int ranks = 2;
    std::map<int, std::pair<int, std::vector<uint64_t>>> slots;  // k -> arrived, minimum
  };
  InOrderConsensus(std::shared_ptr<Exchange> ex, int rank) : ex_(std::move(ex)), rank_(rank) {}

  StatusOr<std::vector<uint64_t>> AllMin(std::vector<uint64_t> values, std::string_view what) override {
    const std::string who = "rank " + std::to_string(rank_);
    ENCORE_RETURN_IF_ERROR(CheckValueCount(values.size(), who, what));
    const uint64_t tag = VoteTag(what);
    AppendTag(values, tag);
    std::unique_lock<std::mutex> lock(ex_->mu);
    auto& [arrived, min] = ex_->slots[next_++];
    if (min.empty()) min.assign(values.size(), UINT64_MAX);
    for (size_t i = 0; i < values.size(); ++i) min[i] = std::min(min[i], values[i]);
    ++arrived;
    ex_->cv.notify_all();
    if (!ex_->cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived == ex_->ranks; })) {
      return Status(StatusCode::kDeadlineExceeded, who + ": no partner");
    }
    std::vector<uint64_t> out = min;
    lock.unlock();
    ENCORE_RETURN_IF_ERROR(CheckTag(out, tag, who, what));
    return out;
  }
  int rank() const override { return rank_; }
  int size() const override { return ex_->ranks; }

 private:
  std::shared_ptr<Exchange> ex_;
  int rank_;
  int next_ = 0;
};

TEST(VoteTagTest, VotesPairedOutOfOrderAreAnErrorOnEveryRank) {
  auto ex = std::make_shared<InOrderConsensus::Exchange>();
  InOrderConsensus r0(ex, 0), r1(ex, 1);
  std::vector<Status> got0, got1;
  // Rank 0 runs 'a' then 'b'; rank 1 runs them the other way round.
  std::thread t0([&] {
    got0.push_back(r0.AllAgree(true, "capture of 'a'").status());
    got0.push_back(r0.AllAgree(false, "capture of 'b'").status());
  });
  std::thread t1([&] {
    got1.push_back(r1.AllAgree(true, "capture of 'b'").status());
    got1.push_back(r1.AllAgree(true, "capture of 'a'").status());
  });
  t0.join();
  t1.join();
  for (const auto* got : {&got0, &got1}) {
    ASSERT_EQ(got->size(), 2u);
    for (const Status& s : *got) EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  }
  const std::string lo = std::to_string(std::min(RankConsensus::VoteTag("capture of 'a'"), RankConsensus::VoteTag("capture of 'b'")));
  const std::string hi = std::to_string(std::max(RankConsensus::VoteTag("capture of 'a'"), RankConsensus::VoteTag("capture of 'b'")));
  EXPECT_EQ(got0[0].message(),
            "rank 0: vote on capture of 'a' was paired with another rank's vote on a different decision (tags from " +
                lo + " to " + hi + ", this rank's " + std::to_string(RankConsensus::VoteTag("capture of 'a'")) +
                "): the ranks voted out of order, as methods that vote concurrently on one communicator do unless "
                "every rank runs them in the same order");
}

TEST(VoteTagTest, VotesPairedInOrderKeepTheirValues) {
  auto ex = std::make_shared<InOrderConsensus::Exchange>();
  InOrderConsensus r0(ex, 0), r1(ex, 1);
  std::vector<uint64_t> got0, got1;
  std::thread t0([&] {
    got0 = *r0.AllMin({UINT64_MAX, 0, 1ull << 63, 9}, "capture of 'a'");
    got0.push_back(*r0.AllEqual(42, "flags of 'b'"));
  });
  std::thread t1([&] {
    got1 = *r1.AllMin({UINT64_MAX, 1, 1ull << 63, 7}, "capture of 'a'");
    got1.push_back(*r1.AllEqual(42, "flags of 'b'"));
  });
  t0.join();
  t1.join();
  EXPECT_EQ(got0, (std::vector<uint64_t>{UINT64_MAX, 0, 1ull << 63, 7, 1}));
  EXPECT_EQ(got1, got0);
}

TEST(VoteTagTest, TagIsFnv1aOfTheDecision) {
  // Pinned (computed in Python): ranks built apart must send the same tag.
  EXPECT_EQ(RankConsensus::VoteTag("capture of 'forward'"), 0x1ae00b4a9e765231ull);
  EXPECT_NE(RankConsensus::VoteTag("capture of 'a'"), RankConsensus::VoteTag("first launch of 'a'"));
}

}  // namespace
}  // namespace encore
