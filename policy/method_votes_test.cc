// SPDX-License-Identifier: Apache-2.0
// MethodVotes on CPU, over a scripted RankConsensus: a "no" is a reason and
// no failure; a vote that fails is both, and stays failed.
#include "encore/policy/internal/method_votes.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "encore/tests/log_capture.h"

namespace encore {
namespace {

// Answers each AllMin with the next scripted result, recording `what`.
class ScriptedConsensus : public RankConsensus {
 public:
  std::deque<StatusOr<std::vector<uint64_t>>> answers;
  std::vector<std::string> asked;

  StatusOr<std::vector<uint64_t>> AllMin(std::vector<uint64_t> values, std::string_view what) override {
    asked.emplace_back(what);
    if (answers.empty()) return values;  // every other rank agrees
    StatusOr<std::vector<uint64_t>> a = std::move(answers.front());
    answers.pop_front();
    return a;
  }
  int rank() const override { return 0; }
  int size() const override { return 2; }
};

struct Fixture {
  std::string name = "forward";
  std::shared_ptr<ScriptedConsensus> consensus = std::make_shared<ScriptedConsensus>();
  LogCapture logs{std::make_shared<spdlog::logger>("method_votes_test")};
  EventLog log{logs.logger()};
  MethodVotes votes{&name, consensus, &log};
};

TEST(MethodVotesTest, AnotherRanksNoTurnsGraphsOffWithoutAFailure) {
  Fixture f;
  f.consensus->answers.push_back(std::vector<uint64_t>{0});
  EXPECT_EQ(f.votes.Vote({}, "capture"), "another rank voted against the capture of 'forward'");
  EXPECT_TRUE(f.votes.failure().ok());
  EXPECT_EQ(f.votes.Vote({}, "capture"), "");
  EXPECT_TRUE(f.votes.failure().ok());
}

TEST(MethodVotesTest, AVoteThatTimesOutIsAFailureThatStays) {
  Fixture f;
  f.consensus->answers.push_back(
      Status(StatusCode::kDeadlineExceeded, "rank 0 of 2: vote on capture of 'forward' did not complete in 50 ms"));
  const std::string why = f.votes.Vote({}, "capture");
  EXPECT_EQ(why,
            "the ranks could not vote on the capture of 'forward': rank 0 of 2: vote on capture of 'forward' did not "
            "complete in 50 ms");
  const Status& failure = f.votes.failure();
  EXPECT_EQ(failure.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(failure.message(),
            "'forward' does not run: its vote on the capture failed, so the ranks are out of step and its collectives "
            "could not pair (rank 0 of 2: vote on capture of 'forward' did not complete in 50 ms); every later call "
            "fails too: make the Manager again, and a communicator NcclConsensus aborted");
  auto line = f.logs.Find("vote_failed");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->level, spdlog::level::err);
  EXPECT_EQ(line->field("what"), "capture");
  // A later vote that succeeds does not clear it: the ranks stay out of step.
  EXPECT_EQ(f.votes.Vote({}, "verify"), "");
  EXPECT_EQ(f.votes.failure().code(), StatusCode::kDeadlineExceeded);
}

TEST(MethodVotesTest, TheFirstFailureIsKept) {
  Fixture f;
  f.consensus->answers.push_back(FailedPreconditionError("paired with another decision"));
  f.consensus->answers.push_back(Status(StatusCode::kDeadlineExceeded, "timed out"));
  EXPECT_NE(f.votes.CompareFlags(MethodFlags{}), "");
  EXPECT_EQ(f.votes.Vote("a host constant", "capture"), "a host constant");  // its own veto stands
  EXPECT_EQ(f.votes.failure().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(f.votes.failure().message().find("its vote on the flags failed"), std::string_view::npos)
      << f.votes.failure();
  EXPECT_EQ(f.consensus->asked, (std::vector<std::string>{"flags of 'forward'", "capture of 'forward'"}));
}

TEST(MethodVotesTest, ASingleRankNeverFails) {
  std::string name = "solo";
  EventLog log;
  MethodVotes votes(&name, nullptr, &log);
  EXPECT_EQ(votes.Vote({}, "capture"), "");
  EXPECT_EQ(votes.Vote("veto", "capture"), "veto");
  EXPECT_TRUE(votes.failure().ok());
}

}  // namespace
}  // namespace encore
