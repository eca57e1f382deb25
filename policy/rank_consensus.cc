// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/rank_consensus.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "encore/core/internal/text.h"

namespace encore {
namespace internal {

struct ThreadConsensusState {
  // One round of votes on one decision. Shared with its waiters, so a later
  // round of the same decision cannot overwrite the result they read.
  struct Round {
    std::vector<uint64_t> min;  // the minimum so far, then the result
    std::vector<bool> voted;    // per rank
    int arrived = 0;
    bool done = false;
  };
  std::mutex mu;
  std::condition_variable cv;
  int ranks;
  std::chrono::milliseconds timeout;
  // The open round of each decision, by `what`; removed when complete.
  std::map<std::string, std::shared_ptr<Round>, std::less<>> open;
  bool broken = false;  // a vote timed out: the ranks are out of step
};

}  // namespace internal

StatusOr<bool> RankConsensus::AllAgree(bool vote, std::string_view what) {
  ENCORE_ASSIGN_OR_RETURN(std::vector<uint64_t> min, AllMin({vote ? 1u : 0u}, what));
  return min[0] == 1;
}

StatusOr<bool> RankConsensus::AllEqual(uint64_t value, std::string_view what) {
  ENCORE_ASSIGN_OR_RETURN(std::vector<uint64_t> min, AllMin({value, ~value}, what));
  return min[0] == ~min[1];
}

uint64_t RankConsensus::VoteTag(std::string_view what) { return Fnv1a(what); }

void RankConsensus::AppendTag(std::vector<uint64_t>& values, uint64_t tag) {
  // {tag, ~tag}: the minimum of ~tag is the complement of the maximum tag,
  // so one element-wise minimum shows whether every rank sent the same.
  values.push_back(tag);
  values.push_back(~tag);
}

Status RankConsensus::CheckTag(std::vector<uint64_t>& min, uint64_t tag, std::string_view who, std::string_view what) {
  if (min.size() < kTagValues) {
    return InternalError(std::string(who) + ": vote on " + std::string(what) + " came back without its tag");
  }
  const uint64_t lowest = min[min.size() - 2];
  const uint64_t highest = ~min[min.size() - 1];
  min.resize(min.size() - kTagValues);
  if (lowest == tag && highest == tag) return OkStatus();
  return FailedPreconditionError(
      std::string(who) + ": vote on " + std::string(what) +
      " was paired with another rank's vote on a different decision (tags from " + std::to_string(lowest) + " to " +
      std::to_string(highest) + ", this rank's " + std::to_string(tag) +
      "): the ranks voted out of order, as methods that vote concurrently on one communicator do unless every "
      "rank runs them in the same order");
}

Status RankConsensus::CheckValueCount(size_t n, std::string_view who, std::string_view what) {
  if (n >= 1 && n <= kMaxValues) return OkStatus();
  return InvalidArgumentError(std::string(who) + ": vote on " + std::string(what) + " has " + std::to_string(n) +
                              " values, must have 1 to " + std::to_string(kMaxValues));
}

namespace {

using State = internal::ThreadConsensusState;
using Round = internal::ThreadConsensusState::Round;

// One rank of a ThreadConsensus.
class Voter : public RankConsensus {
 public:
  Voter(std::shared_ptr<State> state, int rank) : state_(std::move(state)), rank_(rank) {}

  StatusOr<std::vector<uint64_t>> AllMin(std::vector<uint64_t> values, std::string_view what) override {
    const std::string who = "rank " + std::to_string(rank_);
    ENCORE_RETURN_IF_ERROR(CheckValueCount(values.size(), who, what));
    State& s = *state_;
    if (rank_ < 0 || rank_ >= s.ranks) {
      // A voter of no rank of the group: its vote would be out of bounds.
      return InvalidArgumentError("ThreadConsensus: " + who + " is not one of the group's ranks (0 to " +
                                  std::to_string(s.ranks - 1) + "); nothing voted");
    }
    const auto deadline = std::chrono::steady_clock::now() + s.timeout;
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.broken) return FailedPreconditionError(who + ": an earlier vote timed out");
    std::shared_ptr<Round> round = OpenRound(what);
    while (round->voted[rank_]) {
      // This rank is already in the open round of this decision: join the
      // next one once it completes.
      if (!s.cv.wait_until(lock, deadline, [&] { return s.broken || round->done; })) {
        return TimedOut(*round, who, what);
      }
      if (s.broken) return FailedPreconditionError(who + ": an earlier vote timed out");
      round = OpenRound(what);
    }
    // Ranks pass equally many values; should one pass fewer, its missing
    // values constrain nothing.
    if (round->min.size() < values.size()) round->min.resize(values.size(), UINT64_MAX);
    for (size_t i = 0; i < values.size(); ++i) round->min[i] = std::min(round->min[i], values[i]);
    round->voted[rank_] = true;
    if (++round->arrived == s.ranks) {
      // Last to arrive: publish the result; the next vote on `what` opens
      // a new round.
      round->done = true;
      s.open.erase(s.open.find(what));
      s.cv.notify_all();
      return Resized(round->min, values.size());
    }
    if (!s.cv.wait_until(lock, deadline, [&] { return s.broken || round->done; })) {
      return TimedOut(*round, who, what);
    }
    if (!round->done) return FailedPreconditionError(who + ": an earlier vote timed out");
    return Resized(round->min, values.size());
  }
  int rank() const override { return rank_; }
  int size() const override { return state_->ranks; }

 private:
  // The open round of `what`, opened if none is. Called with the lock held.
  std::shared_ptr<Round> OpenRound(std::string_view what) {
    State& s = *state_;
    auto it = s.open.find(what);
    if (it == s.open.end()) {
      auto round = std::make_shared<Round>();
      round->voted.assign(static_cast<size_t>(s.ranks), false);
      it = s.open.emplace(std::string(what), std::move(round)).first;
    }
    return it->second;
  }

  // The group is out of step now: later votes, and votes waiting on other
  // decisions, fail at once. Called with the lock held.
  Status TimedOut(const Round& round, const std::string& who, std::string_view what) {
    State& s = *state_;
    s.broken = true;
    s.cv.notify_all();
    return Status(StatusCode::kDeadlineExceeded,
                  who + ": vote on " + std::string(what) + " timed out after " + std::to_string(s.timeout.count()) +
                      " ms waiting for " + std::to_string(s.ranks - round.arrived) + " of " +
                      std::to_string(s.ranks) + " ranks");
  }

  static std::vector<uint64_t> Resized(const std::vector<uint64_t>& v, size_t n) {
    return std::vector<uint64_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  }

  std::shared_ptr<State> state_;
  int rank_;
};

}  // namespace

ThreadConsensus::ThreadConsensus(int ranks, std::chrono::milliseconds timeout) : state_(std::make_shared<State>()) {
  state_->ranks = ranks;
  state_->timeout = timeout;
}

std::shared_ptr<RankConsensus> ThreadConsensus::Rank(int r) { return std::make_shared<Voter>(state_, r); }

}  // namespace encore
