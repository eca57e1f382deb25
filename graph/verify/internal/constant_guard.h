// SPDX-License-Identifier: Apache-2.0
// ConstantGuard: what a method's calls write in its listed constants, and
// the means to run one call twice (the capture's probe, a verified launch)
// without applying its writes twice, at a cost of what the call writes, not
// of what the constants weigh.
//
// Device-side checksums of 1 MiB blocks (RegionChecksums) taken around the
// warmup calls show which blocks a call writes; only those are snapshotted
// (BlockSnapshot). Everything else is proven unchanged by a checksum pass:
// after the first run (before any second run: a block the first run wrote
// outside the snapshot could not be put back, so the second run must not
// happen), and after the second. Host memory is independent of the
// constants' size; device memory is two copies of the written blocks per
// run in progress plus 8 bytes per block per checksum slot.
//
// A constant flagged read_only is never snapshotted: a change to it is the
// application's error, reported by name.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_CONSTANT_GUARD_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_CONSTANT_GUARD_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/graph/method_spec.h"
#include "encore/graph/verify/internal/block_snapshot.h"
#include "encore/graph/verify/internal/region_checksums.h"

namespace encore {

class GuardedRun;

class ConstantGuard {
 public:
  static constexpr int kSlots = 8;

  // Over the non-empty constants of `constants` (null when there is none).
  // FailedPrecondition, naming it, for a constant the guard must not read:
  // not in device memory, or listed with more bytes than its allocation
  // holds. Allocates (not during a capture) and waits for `stream`.
  static StatusOr<std::unique_ptr<ConstantGuard>> Create(const std::vector<Constant>& constants,
                                                         cudaStream_t stream);
  ~ConstantGuard();

  // --- around a call that runs once (a warmup): learns what it writes.
  // The state after the last call seen stands for the state before the
  // next (the application changing a constant between calls only makes
  // encore save more or stage a graph, never run one wrongly).
  Status BeforeCall(cudaStream_t stream);
  Status AfterCall(cudaStream_t stream);
  // A read-only constant that a call changed, named, or empty.
  const std::string& violation() const { return violation_; }

  // --- a call that runs twice: before the first run, the written blocks
  // saved. A FailedPrecondition with the reason when it cannot be (more to
  // save than `max_bytes`, a read-only constant changed).
  StatusOr<std::unique_ptr<GuardedRun>> BeginTwice(size_t max_bytes, cudaStream_t stream);

  // What the calls were seen to write, to carry over to the guard of a list
  // whose constants moved (Method::RebindConstants: the same sizes in the
  // same order, so the same blocks): no warmup runs again to learn it.
  struct Learned {
    std::vector<size_t> sizes;      // the guarded constants' sizes, in order
    std::vector<int64_t> written;   // ascending block indices
    bool too_many = false;
  };
  Learned learned() const { return Learned{sizes_, written_, too_many_}; }
  // Adds `from`'s written blocks (those of constants not read_only now)
  // when its constants have these sizes; else nothing.
  void Inherit(const Learned& from);

  // Bytes of the blocks calls were seen to write, and of all the blocks.
  size_t written_bytes() const;
  size_t total_bytes() const { return total_bytes_; }
  // Checksum passes over every constant so far (for benchmarks).
  int64_t passes() const { return passes_; }

 private:
  friend class GuardedRun;
  ConstantGuard() = default;
  Status Pass(int slot, int reference, bool skip, cudaStream_t stream);
  StatusOr<int> TakeSlot();
  void Hold(int slot) { ++holds_[slot]; }
  void Drop(int slot);
  void SetReference(int slot);
  // Adds the blocks that differ between slots a and b to the written set;
  // a read-only constant's block becomes the violation instead.
  Status Learn(int a, int b, cudaStream_t stream);
  Status SyncSkipMask(cudaStream_t stream);
  // Constants of one block and at most 1 MiB are saved from the start.
  void SaveSmallRegions();
  std::string Name(size_t region) const { return "constant '" + names_[region] + "'"; }
  std::string OutsideReason(const ChecksumVerdict& v, std::string_view when) const;

  RegionChecksums sums_;
  std::vector<std::string> names_;
  std::vector<bool> read_only_;
  std::vector<size_t> sizes_;
  size_t total_bytes_ = 0;
  std::vector<int64_t> written_;  // ascending block indices
  bool mask_stale_ = true;
  std::array<int, kSlots> holds_{};  // who uses each checksum slot
  int ref_ = -1;  // the slot holding the state after the last call seen
  std::string violation_;
  bool too_many_ = false;  // more written blocks than can be listed
  int64_t passes_ = 0;
  // Snapshots of the written blocks, kept for the next run while unused.
  std::vector<int64_t> spare_for_;
  std::unique_ptr<BlockSnapshot> spare_before_, spare_first_;
};

// One call run twice under the guard. Destroying it ends the run.
class GuardedRun {
 public:
  ~GuardedRun();
  GuardedRun(const GuardedRun&) = delete;
  GuardedRun& operator=(const GuardedRun&) = delete;

  // After the first run: empty when it wrote only saved blocks, which are
  // then put back as they were before it (the second run starts where the
  // first did); else why not, naming the constant, and the first run's
  // state stands (its blocks are learned for the next time).
  StatusOr<std::string> RewindFirst(cudaStream_t stream);
  // Queues RewindFirst's checksum pass right after the first run, with no
  // wait, so the host can do other work while it runs.
  Status QueueFirstPass(cudaStream_t stream);
  // After the second run: the first difference between the two runs'
  // constants ("constant 'kv' byte 8: graph 1, eager 2"), or that the
  // second wrote outside the saved blocks; empty when they agree. With
  // `compare_bytes` false (a tolerance is set: constants are bytes), only
  // writes outside the saved blocks count.
  StatusOr<std::string> CompareSecond(bool compare_bytes, cudaStream_t stream);
  // CompareSecond in two steps: its checks queued, then read (after the
  // caller's own wait, so that one wait covers both).
  Status QueueSecond(bool compare_bytes, cudaStream_t stream);
  StatusOr<std::string> ReadSecond(cudaStream_t stream);
  // The first run's state stands (its saved blocks put back), or the
  // second's (nothing to put back).
  Status KeepFirst(cudaStream_t stream);
  void KeepSecond();

 private:
  friend class ConstantGuard;
  explicit GuardedRun(ConstantGuard* g) : g_(g) {}
  ConstantGuard* const g_;
  std::vector<int64_t> blocks_;
  std::unique_ptr<BlockSnapshot> before_, first_;
  int before_slot_ = -1, first_slot_ = -1, second_slot_ = -1;
  bool second_queued_ = false;  // QueueSecond ran; ReadSecond not yet
  bool compare_bytes_ = false;  // QueueSecond queued the saved blocks' comparison
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_CONSTANT_GUARD_H_
