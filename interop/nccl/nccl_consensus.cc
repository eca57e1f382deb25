// SPDX-License-Identifier: Apache-2.0
#include "encore/interop/nccl/nccl_consensus.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/device_memory.h"
#include "encore/core/internal/stream.h"

namespace encore {
namespace internal {

struct NcclVoteChannel {
  ncclComm_t comm = nullptr;
  std::chrono::milliseconds timeout{0};
  Stream stream;
  // One vote at a time: NCCL calls on one communicator from two threads
  // could interleave, and votes share the buffers below.
  std::mutex mu;
  DeviceMemory device_vote;    // kMaxValues + kTagValues uint64_t
  PinnedHostMemory host_vote;  // kMaxValues + kTagValues uint64_t
};

}  // namespace internal

namespace {

Status NcclStatus(ncclResult_t r, std::string_view what) {
  if (r == ncclSuccess) return OkStatus();
  return InternalError(std::string(what) + ": " + ncclGetErrorString(r));
}

}  // namespace

NcclConsensus::NcclConsensus() : channel_(std::make_unique<internal::NcclVoteChannel>()) {}

NcclConsensus::~NcclConsensus() = default;

StatusOr<std::shared_ptr<NcclConsensus>> NcclConsensus::Create(ncclComm_t comm, std::chrono::milliseconds timeout) {
  if (comm == nullptr) return InvalidArgumentError("NcclConsensus: the communicator is null");
  std::shared_ptr<NcclConsensus> c(new NcclConsensus());
  internal::NcclVoteChannel& ch = *c->channel_;
  ch.comm = comm;
  ch.timeout = timeout;
  ENCORE_RETURN_IF_ERROR(NcclStatus(ncclCommUserRank(comm, &c->rank_), "ncclCommUserRank"));
  ENCORE_RETURN_IF_ERROR(NcclStatus(ncclCommCount(comm, &c->size_), "ncclCommCount"));
  ENCORE_ASSIGN_OR_RETURN(ch.stream, Stream::Create());
  constexpr size_t kBytes = (kMaxValues + kTagValues) * sizeof(uint64_t);
  ENCORE_ASSIGN_OR_RETURN(ch.device_vote, DeviceMemory::Allocate(kBytes));
  ENCORE_ASSIGN_OR_RETURN(ch.host_vote, PinnedHostMemory::Allocate(kBytes));
  return c;
}

StatusOr<std::vector<uint64_t>> NcclConsensus::AllMin(std::vector<uint64_t> values, std::string_view what) {
  const std::string who = "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  ENCORE_RETURN_IF_ERROR(CheckValueCount(values.size(), who, what));
  internal::NcclVoteChannel& ch = *channel_;
  std::lock_guard<std::mutex> lock(ch.mu);
  if (aborted_) return FailedPreconditionError(who + ": an earlier vote failed and aborted the communicator");
  const uint64_t tag = VoteTag(what);
  AppendTag(values, tag);
  const size_t n = values.size();
  uint64_t* host_vote = ch.host_vote.as<uint64_t>();
  uint64_t* device_vote = ch.device_vote.as<uint64_t>();
  std::copy(values.begin(), values.end(), host_vote);
  cudaStream_t s = ch.stream.get();
  ENCORE_CUDA_CALL(MemcpyAsync, device_vote, host_vote, n * sizeof(uint64_t), cudaMemcpyHostToDevice, s);
  ENCORE_RETURN_IF_ERROR(NcclStatus(ncclAllReduce(device_vote, device_vote, n, ncclUint64, ncclMin, ch.comm, s),
                                    "ncclAllReduce (vote)"));
  ENCORE_CUDA_CALL(MemcpyAsync, host_vote, device_vote, n * sizeof(uint64_t), cudaMemcpyDeviceToHost, s);
  // Poll rather than block: a rank that never votes must end in an error,
  // not a hang.
  const auto deadline = std::chrono::steady_clock::now() + ch.timeout;
  for (;;) {
    cudaError_t q = cuda().StreamQuery(s);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) return CudaStatus(q, "cudaStreamQuery (vote)");
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(ch.comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
      return Abort(InternalError(who + ": vote on " + std::string(what) + ": NCCL reports " +
                                 ncclGetErrorString(async) + "; the communicator was aborted"));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Abort(Status(StatusCode::kDeadlineExceeded, who + ": vote on " + std::string(what) +
                                                             " did not complete in " +
                                                             std::to_string(ch.timeout.count()) +
                                                             " ms; the communicator was aborted"));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  std::vector<uint64_t> min(host_vote, host_vote + n);
  ENCORE_RETURN_IF_ERROR(CheckTag(min, tag, who, what));
  return min;
}

Status NcclConsensus::Abort(Status why) {
  if (!aborted_.exchange(true, std::memory_order_acq_rel)) (void)ncclCommAbort(channel_->comm);
  return why;
}

}  // namespace encore
