#include "encore/policy/rank_consensus.h"

#include <string>

namespace encore {

class ThreadConsensus::Voter : public RankConsensus {
 public:
  Voter(std::shared_ptr<State> state, int rank) : state_(std::move(state)), rank_(rank) {}

  StatusOr<bool> AllAgree(bool vote, std::string_view what) override {
    State& s = *state_;
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.broken) return FailedPreconditionError("rank " + std::to_string(rank_) + ": an earlier vote timed out");
    const unsigned long long round = s.round;
    s.all = s.all && vote;
    if (++s.arrived == s.ranks) {
      // Last to arrive: publish the result and open the next round.
      s.result = s.all;
      s.all = true;
      s.arrived = 0;
      ++s.round;
      s.cv.notify_all();
      return s.result;
    }
    if (!s.cv.wait_for(lock, s.timeout, [&] { return s.round != round || s.broken; })) {
      // The group is out of step now; later votes fail at once.
      s.broken = true;
      s.cv.notify_all();
      return Status(StatusCode::kDeadlineExceeded,
                    "rank " + std::to_string(rank_) + ": vote on " + std::string(what) + " timed out after " +
                        std::to_string(s.timeout.count()) + " ms waiting for " +
                        std::to_string(s.ranks - s.arrived) + " of " + std::to_string(s.ranks) + " ranks");
    }
    if (s.round == round) return FailedPreconditionError("rank " + std::to_string(rank_) + ": an earlier vote timed out");
    return s.result;
  }
  int rank() const override { return rank_; }
  int size() const override { return state_->ranks; }

 private:
  std::shared_ptr<State> state_;
  int rank_;
};

ThreadConsensus::ThreadConsensus(int ranks, std::chrono::milliseconds timeout) : state_(std::make_shared<State>()) {
  state_->ranks = ranks;
  state_->timeout = timeout;
}

std::shared_ptr<RankConsensus> ThreadConsensus::Rank(int r) { return std::make_shared<Voter>(state_, r); }

}  // namespace encore
