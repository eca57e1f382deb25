// RankConsensus: how the ranks that run one method together (tensor-parallel
// processes or threads, each with its own Manager) agree before a capture,
// a recapture or graphs being turned off. If rank 0 replays a graph while
// rank 1 fell back to eager, their collectives still match call for call;
// but if one rank turns graphs off in the middle of a capture that another
// rank completes, or one captures while another does not, they can deadlock.
// So every such decision is a vote that every rank casts at the same point:
// all capture or none.
//
// Votes are collective: each rank votes the same number of times in the
// same order. That holds when ranks run the same methods with the same
// decision flags on the same shapes, the usual tensor-parallel setup; the
// flags are checked, since a per-rank ENCORE_METHOD_FLAGS can differ: at a
// method's first call (a point every rank reaches whatever its flags) the
// ranks compare DecisionFlagsFingerprint and, if any differ, every rank turns
// graphs off for that method. Refusals of a new shape need no vote: with
// equal flags and shapes every rank refuses the same call. Pure interface,
// no CUDA: NcclConsensus (graph/) implements it over NCCL, ThreadConsensus
// (below) for ranks that are threads.
#ifndef ENCORE_POLICY_RANK_CONSENSUS_H_
#define ENCORE_POLICY_RANK_CONSENSUS_H_

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "encore/core/status.h"

namespace encore {

class RankConsensus {
 public:
  // The most values one AllMin takes: a vote is a few flags, not data.
  static constexpr size_t kMaxValues = 4;

  virtual ~RankConsensus() = default;
  // The element-wise minimum of every rank's `values`; every rank passes
  // the same number (1 to kMaxValues, else InvalidArgument). `what` names
  // the decision for logs and errors. A rank that does not vote in time is
  // an error (kDeadlineExceeded), never a hang.
  virtual StatusOr<std::vector<uint64_t>> AllMin(std::vector<uint64_t> values, std::string_view what) = 0;

  // True when every rank voted true: one AllMin.
  StatusOr<bool> AllAgree(bool vote, std::string_view what);
  // True when every rank passed the same `value`: one AllMin of {value,
  // ~value}, whose second minimum is the complement of the maximum.
  StatusOr<bool> AllEqual(uint64_t value, std::string_view what);
  virtual int rank() const = 0;
  virtual int size() const = 0;

 protected:
  // The AllMin contract on the number of values, for implementations to
  // check first; `who` names the rank in the error.
  static Status CheckValueCount(size_t n, std::string_view who, std::string_view what);
};

// Ranks that are threads of one process: each thread holds its own
// ThreadConsensus::Rank, made from one shared ThreadConsensus.
class ThreadConsensus {
 public:
  ThreadConsensus(int ranks, std::chrono::milliseconds timeout);

  // The voter for rank `r` (0 <= r < ranks); it shares this object's state.
  std::shared_ptr<RankConsensus> Rank(int r);

 private:
  class Voter;
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int ranks;
    std::chrono::milliseconds timeout;
    int arrived = 0;
    std::vector<uint64_t> min;     // this round's minimum so far
    std::vector<uint64_t> result;  // the last round's
    unsigned long long round = 0;
    bool broken = false;  // a vote timed out: the ranks are out of step
  };
  std::shared_ptr<State> state_;
};

}  // namespace encore

#endif  // ENCORE_POLICY_RANK_CONSENSUS_H_
