#include "encore/policy/rank_consensus.h"

#include <algorithm>
#include <string>

namespace encore {

StatusOr<bool> RankConsensus::AllAgree(bool vote, std::string_view what) {
  ENCORE_ASSIGN_OR_RETURN(std::vector<uint64_t> min, AllMin({vote ? 1u : 0u}, what));
  return min[0] == 1;
}

StatusOr<bool> RankConsensus::AllEqual(uint64_t value, std::string_view what) {
  ENCORE_ASSIGN_OR_RETURN(std::vector<uint64_t> min, AllMin({value, ~value}, what));
  return min[0] == ~min[1];
}

Status RankConsensus::CheckValueCount(size_t n, std::string_view who, std::string_view what) {
  if (n >= 1 && n <= kMaxValues) return OkStatus();
  return InvalidArgumentError(std::string(who) + ": vote on " + std::string(what) + " has " + std::to_string(n) +
                              " values, must have 1 to " + std::to_string(kMaxValues));
}

class ThreadConsensus::Voter : public RankConsensus {
 public:
  Voter(std::shared_ptr<State> state, int rank) : state_(std::move(state)), rank_(rank) {}

  StatusOr<std::vector<uint64_t>> AllMin(std::vector<uint64_t> values, std::string_view what) override {
    const std::string who = "rank " + std::to_string(rank_);
    ENCORE_RETURN_IF_ERROR(CheckValueCount(values.size(), who, what));
    State& s = *state_;
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.broken) return FailedPreconditionError(who + ": an earlier vote timed out");
    const unsigned long long round = s.round;
    // Ranks pass equally many values; should one pass fewer, its missing
    // values constrain nothing.
    if (s.min.size() < values.size()) s.min.resize(values.size(), UINT64_MAX);
    for (size_t i = 0; i < values.size(); ++i) s.min[i] = std::min(s.min[i], values[i]);
    if (++s.arrived == s.ranks) {
      // Last to arrive: publish the result and open the next round.
      s.result = std::move(s.min);
      s.min.clear();
      s.arrived = 0;
      ++s.round;
      s.cv.notify_all();
      return Resized(s.result, values.size());
    }
    if (!s.cv.wait_for(lock, s.timeout, [&] { return s.round != round || s.broken; })) {
      // The group is out of step now; later votes fail at once.
      s.broken = true;
      s.cv.notify_all();
      return Status(StatusCode::kDeadlineExceeded,
                    who + ": vote on " + std::string(what) + " timed out after " + std::to_string(s.timeout.count()) +
                        " ms waiting for " + std::to_string(s.ranks - s.arrived) + " of " +
                        std::to_string(s.ranks) + " ranks");
    }
    if (s.round == round) return FailedPreconditionError(who + ": an earlier vote timed out");
    // Only the round after ours could have replaced the result, and it
    // cannot complete without this rank.
    return Resized(s.result, values.size());
  }
  int rank() const override { return rank_; }
  int size() const override { return state_->ranks; }

 private:
  static std::vector<uint64_t> Resized(const std::vector<uint64_t>& v, size_t n) {
    return std::vector<uint64_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  }

  std::shared_ptr<State> state_;
  int rank_;
};

ThreadConsensus::ThreadConsensus(int ranks, std::chrono::milliseconds timeout) : state_(std::make_shared<State>()) {
  state_->ranks = ranks;
  state_->timeout = timeout;
}

std::shared_ptr<RankConsensus> ThreadConsensus::Rank(int r) { return std::make_shared<Voter>(state_, r); }

}  // namespace encore
