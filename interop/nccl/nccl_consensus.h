// SPDX-License-Identifier: Apache-2.0
// NcclConsensus: RankConsensus over NCCL itself. A vote is an all-reduce
// (minimum) of at most four 64-bit integers on the communicator the method's collectives use, on
// a stream of its own, so ranks agree through the same channel their
// collectives travel and no second one has to be set up. Each vote also
// carries its tag and holds the object's lock; see RankConsensus on methods
// that vote concurrently.
//
// Bazel: //interop/nccl:nccl_consensus (or the root's //:nccl_consensus);
// CMake: encore::nccl_consensus. Built only where NCCL is installed.
#ifndef ENCORE_INTEROP_NCCL_NCCL_CONSENSUS_H_
#define ENCORE_INTEROP_NCCL_NCCL_CONSENSUS_H_

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/policy/rank_consensus.h"

namespace encore {
namespace internal {
// The communicator, the vote's stream and buffers and the lock that
// serializes votes; defined in nccl_consensus.cc, so this header needs no
// CUDA wrapper of encore's.
struct NcclVoteChannel;
}  // namespace internal

class NcclConsensus : public RankConsensus {
 public:
  // `comm` stays the caller's and must outlive this object. Must be called
  // with the communicator's device current. A vote that has not completed
  // after `timeout`, or that NCCL reports an asynchronous error for, aborts
  // the communicator (ncclCommAbort: the ranks are out of step and its
  // collectives could never complete; the vote's own all-reduce would spin
  // on the GPU for good) and is an error. ncclCommAbort frees the
  // communicator: once aborted() is true the caller must neither use nor
  // destroy `comm`. The methods that voted return the error from Run
  // instead of running their bodies (MethodVotes::failure).
  static StatusOr<std::shared_ptr<NcclConsensus>> Create(ncclComm_t comm, std::chrono::milliseconds timeout);
  ~NcclConsensus() override;

  StatusOr<std::vector<uint64_t>> AllMin(std::vector<uint64_t> values, std::string_view what) override;
  int rank() const override { return rank_; }
  // Whether a failed vote aborted (and so freed) the communicator.
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  int size() const override { return size_; }

 private:
  NcclConsensus();
  // Aborts the communicator (once) and returns `why`. Called with the
  // channel's lock held.
  Status Abort(Status why);

  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<internal::NcclVoteChannel> channel_;
  // Set under the channel's lock, read by aborted() without it.
  std::atomic<bool> aborted_{false};
};

}  // namespace encore

#endif  // ENCORE_INTEROP_NCCL_NCCL_CONSENSUS_H_
