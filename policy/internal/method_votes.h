// SPDX-License-Identifier: Apache-2.0
// MethodVotes: one method's votes across ranks, so that every rank captures
// a method together or none does. Each decision is one RankConsensus
// collective. A vote that fails (timed out, paired with another decision's,
// NCCL failed) counts as a "no" and leaves failure() set for good: the ranks
// are out of step. Internal; the method's owner serializes calls.
#ifndef ENCORE_POLICY_INTERNAL_METHOD_VOTES_H_
#define ENCORE_POLICY_INTERNAL_METHOD_VOTES_H_

#include <memory>
#include <string>
#include <string_view>

#include "encore/core/internal/log.h"
#include "encore/core/status.h"
#include "encore/policy/method_flags.h"
#include "encore/policy/rank_consensus.h"

namespace encore {

class MethodVotes {
 public:
  // `consensus` null: a single rank, and every vote passes without a call.
  MethodVotes(const std::string* method, std::shared_ptr<RankConsensus> consensus, const EventLog* log)
      : method_(method), consensus_(std::move(consensus)), log_(log) {}

  bool several_ranks() const { return consensus_ != nullptr; }
  bool flags_compared() const { return flags_compared_; }

  // At a method's first call, a point every rank reaches whatever its flags:
  // why graphs must go off on every rank (the ranks' decision flags differ,
  // so their later votes would fall out of step, or the comparison failed),
  // or empty when they agree.
  std::string CompareFlags(const MethodFlags& flags);
  // Casts this rank's vote on `what` ("capture", "first launch"; `veto`
  // empty = yes) and returns why graphs must go off: `veto`, another rank's
  // no, or a failed vote; empty when all agree.
  std::string Vote(std::string veto, std::string_view what);

  // OK until a vote fails; then why the method must not run its body again,
  // with the consensus's code (kDeadlineExceeded for a timeout): the ranks
  // are out of step, so the body's collectives could never pair (a hang on
  // the GPU), and NcclConsensus has aborted the communicator they use.
  const Status& failure() const { return failure_; }

 private:
  // Keeps the first failed vote's status, worded for the method's caller.
  void NoteFailure(const Status& s, std::string_view what);

  const std::string* const method_;
  const std::shared_ptr<RankConsensus> consensus_;
  const EventLog* const log_;
  bool flags_compared_ = false;
  Status failure_;
};

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_METHOD_VOTES_H_
