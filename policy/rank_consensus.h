// SPDX-License-Identifier: Apache-2.0
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
// no CUDA: NcclConsensus (interop/nccl/) implements it over NCCL, ThreadConsensus
// (below) for ranks that are threads.
//
// Methods that vote at once. Different methods may run concurrently on one
// rank (on different threads), each voting through the same RankConsensus.
// Every vote carries its decision, `what` ("capture of 'forward'"), which
// names the method and the kind of vote, and a vote is only ever combined
// with the other ranks' votes on the same `what`:
//  - ThreadConsensus pairs votes by `what`: each decision has rounds of its
//    own, so concurrent methods cannot pair with each other, whatever order
//    their threads reach it in.
//  - NcclConsensus cannot choose: a vote is an all-reduce, and NCCL pairs
//    the k-th collective of every rank on a communicator, so votes pair in
//    the order each rank issues them, as the methods' own collectives do.
//    It serializes its votes (two threads never interleave their calls on
//    the communicator) and sends VoteTag(what) with each, so a vote paired
//    with another decision's is an error on every rank (those methods turn
//    graphs off on every rank), never a silently mixed result. Methods that
//    vote concurrently on one communicator stay paired only if the
//    application runs them in the same order on every rank, which NCCL
//    already requires of their collectives; else give each concurrent
//    method a communicator of its own.
#ifndef ENCORE_POLICY_RANK_CONSENSUS_H_
#define ENCORE_POLICY_RANK_CONSENSUS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "encore/core/status.h"

namespace encore {
namespace internal {
// What the voters of one ThreadConsensus share; defined where it is used
// only, so this header carries none of its members.
struct ThreadConsensusState;
}  // namespace internal

class RankConsensus {
 public:
  // The most values one AllMin takes: a vote is a few flags, not data.
  static constexpr size_t kMaxValues = 4;

  virtual ~RankConsensus() = default;
  // The element-wise minimum of every rank's `values`; every rank passes
  // the same number (1 to kMaxValues, else InvalidArgument). `what` names
  // the decision, and only votes on the same `what` combine (see above):
  // every rank's vote on one decision passes the same text. A rank that
  // does not vote in time is an error (kDeadlineExceeded), never a hang; a
  // vote paired with another decision's is kFailedPrecondition.
  virtual StatusOr<std::vector<uint64_t>> AllMin(std::vector<uint64_t> values, std::string_view what) = 0;

  // A 64-bit FNV-1a hash of `what`, stable across processes and builds:
  // what a vote sends so that the ranks can check that they voted on the
  // same decision.
  static uint64_t VoteTag(std::string_view what);

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

  // For implementations whose votes pair by order (NcclConsensus): AppendTag
  // adds kTagValues values carrying `tag` to a vote before the element-wise
  // minimum; CheckTag removes them from the minimum and is an error,
  // kFailedPrecondition, unless every rank sent `tag`.
  static constexpr size_t kTagValues = 2;
  static void AppendTag(std::vector<uint64_t>& values, uint64_t tag);
  static Status CheckTag(std::vector<uint64_t>& min, uint64_t tag, std::string_view who, std::string_view what);
};

// Ranks that are threads of one process: each thread holds its own
// ThreadConsensus::Rank, made from one shared ThreadConsensus. Votes pair by
// `what` (see above); a vote whose `what` no other rank votes on times out.
// A rank that votes again on a `what` whose round it is already in (the
// method on a second device) waits for that round and joins the next.
class ThreadConsensus {
 public:
  ThreadConsensus(int ranks, std::chrono::milliseconds timeout);

  // The voter for rank `r` (0 <= r < ranks); it shares this object's state.
  // A voter of any other `r` answers every vote with InvalidArgument.
  std::shared_ptr<RankConsensus> Rank(int r);

 private:
  // The rounds of votes the ranks share (policy/rank_consensus.cc).
  std::shared_ptr<internal::ThreadConsensusState> state_;
};

}  // namespace encore

#endif  // ENCORE_POLICY_RANK_CONSENSUS_H_
