// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/method_votes.h"

#include "encore/policy/internal/flag_table.h"

namespace encore {

std::string MethodVotes::CompareFlags(const MethodFlags& flags) {
  flags_compared_ = true;
  if (!consensus_) return {};
  const std::string& name = *method_;
  const std::string mine = DecisionFlagsText(flags);
  StatusOr<bool> same = consensus_->AllEqual(DecisionFlagsFingerprint(flags), "flags of '" + name + "'");
  if (!same.ok()) {
    log_->Error("vote_failed", {{"method", name}, {"what", "flags"}, {"error", same.status().message()}});
    NoteFailure(same.status(), "flags");
    return "the ranks could not compare the flags of '" + name + "': " + std::string(same.status().message());
  }
  if (!*same) {
    log_->Warn("flags_differ", {{"method", name}, {"rank", consensus_->rank()}, {"flags", mine}});
    return "the ranks run '" + name + "' with different flags (this rank: " + mine +
           "); graphs are off on every rank so that their votes stay in step";
  }
  log_->Debug("flags_agreed", {{"method", name}, {"rank", consensus_->rank()}, {"flags", mine}});
  return {};
}

std::string MethodVotes::Vote(std::string veto, std::string_view what) {
  if (!consensus_) return veto;
  const std::string& name = *method_;
  const std::string decision = std::string(what) + " of '" + name + "'";
  StatusOr<bool> agreed = consensus_->AllAgree(veto.empty(), decision);
  if (!agreed.ok()) {
    log_->Error("vote_failed", {{"method", name}, {"what", what}, {"error", agreed.status().message()}});
    NoteFailure(agreed.status(), what);
    return veto.empty() ? "the ranks could not vote on the " + decision + ": " + std::string(agreed.status().message())
                        : veto;
  }
  log_->Info("vote", {{"method", name}, {"what", what}, {"rank", consensus_->rank()}, {"vote", veto.empty()},
                      {"agreed", *agreed}});
  if (*agreed || !veto.empty()) return veto;
  return "another rank voted against the " + decision;
}

void MethodVotes::NoteFailure(const Status& s, std::string_view what) {
  if (!failure_.ok()) return;
  const std::string& name = *method_;
  failure_ = Status(s.code(), "'" + name + "' does not run: its vote on the " + std::string(what) +
                                  " failed, so the ranks are out of step and its collectives could not pair (" +
                                  std::string(s.message()) +
                                  "); every later call fails too: make the Manager again, and a communicator NcclConsensus aborted");
}

}  // namespace encore
