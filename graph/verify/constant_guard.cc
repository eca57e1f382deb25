// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/constant_guard.h"

#include <algorithm>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"

namespace encore {
namespace {

constexpr size_t kMaxListed = 4096;  // written blocks listed at most (4 GiB of written state)
// Constants this small are always saved, whether or not a warmup was seen
// to write them (a counter, a position: a method may capture on its first
// call), up to this much in all.
constexpr size_t kSmallBytes = size_t{1} << 20;
constexpr size_t kSmallBudget = size_t{64} << 20;

// Why the guard must not read `c` (its checksums would read every byte):
// not device memory, or more bytes than its allocation holds from there.
std::string Unguardable(const Constant& c) {
  cudaPointerAttributes attr{};
  if (Status s = CudaResult(cuda().PointerGetAttributes(&attr, c.data), CudaCall::kPointerGetAttributes); !s.ok()) {
    return "constant '" + c.name + "': " + std::string(s.message());
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
    return "constant '" + c.name + "' is not in device memory";
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  const auto at = reinterpret_cast<CUdeviceptr>(c.data);
  if (cuda().DriverMemGetAddressRange(&base, &size, at) != cudaSuccess) {
    ClearCudaError();
    return {};  // no range to check against (not a cudaMalloc'd block): its bytes are the application's word
  }
  const size_t held = base + size - at;
  if (c.bytes > held) {
    return "constant '" + c.name + "' is listed with " + std::to_string(c.bytes) + " bytes, but its allocation " +
           "holds " + std::to_string(held) + " from its address";
  }
  return {};
}

}  // namespace

StatusOr<std::unique_ptr<ConstantGuard>> ConstantGuard::Create(const std::vector<Constant>& constants,
                                                               cudaStream_t stream) {
  std::unique_ptr<ConstantGuard> g(new ConstantGuard());
  std::vector<ChecksumRegion> regions;
  for (const Constant& c : constants) {
    if (c.bytes == 0) continue;
    if (std::string why = Unguardable(c); !why.empty()) return FailedPreconditionError(why);
    regions.push_back(ChecksumRegion{c.data, c.bytes, c.name});
    g->names_.push_back(c.name);
    g->read_only_.push_back(c.read_only);
    g->sizes_.push_back(c.bytes);
    g->total_bytes_ += c.bytes;
  }
  if (regions.empty()) return std::unique_ptr<ConstantGuard>();  // nothing to guard
  RegionChecksumsOptions options;
  options.slots = kSlots;
  options.skip_mask = true;
  options.list_capacity = kMaxListed;
  ENCORE_ASSIGN_OR_RETURN(g->sums_, RegionChecksums::Create(std::move(regions), options, stream));
  g->SaveSmallRegions();
  return g;
}

ConstantGuard::~ConstantGuard() = default;

void ConstantGuard::SaveSmallRegions() {
  size_t saved = 0;
  for (size_t r = 0; r < sizes_.size(); ++r) {
    if (read_only_[r] || sizes_[r] > kSmallBytes || saved + sizes_[r] > kSmallBudget) continue;
    written_.push_back(sums_.map().first_block(r));  // one block: the whole constant
    saved += sizes_[r];
  }
  mask_stale_ = true;
}

void ConstantGuard::Inherit(const Learned& from) {
  if (from.sizes != sizes_) return;
  too_many_ |= from.too_many;
  for (int64_t block : from.written) {
    StatusOr<BlockLocation> at = sums_.map().Locate(block);
    if (!at.ok() || read_only_[at->region]) continue;
    if (std::binary_search(written_.begin(), written_.end(), block)) continue;
    written_.insert(std::upper_bound(written_.begin(), written_.end(), block), block);
    mask_stale_ = true;
  }
}

size_t ConstantGuard::written_bytes() const { return written_.size() * RegionChecksums::kBlockBytes; }

StatusOr<int> ConstantGuard::TakeSlot() {
  for (int s = 0; s < kSlots; ++s) {
    if (holds_[s] == 0) {
      holds_[s] = 1;
      return s;
    }
  }
  return InternalError("the constant guard has no free checksum slot (too many runs at once)");
}

void ConstantGuard::Drop(int slot) {
  if (slot >= 0) --holds_[slot];
}

void ConstantGuard::SetReference(int slot) {
  Hold(slot);
  Drop(ref_);
  ref_ = slot;
}

Status ConstantGuard::Pass(int slot, int reference, bool skip, cudaStream_t stream) {
  ++passes_;
  if (reference < 0) return sums_.Compute(slot, stream);
  if (skip) ENCORE_RETURN_IF_ERROR(SyncSkipMask(stream));
  return sums_.ComputeAndCompare(slot, reference, skip, stream);
}

Status ConstantGuard::SyncSkipMask(cudaStream_t stream) {
  if (!mask_stale_) return OkStatus();
  ENCORE_RETURN_IF_ERROR(sums_.SetSkipBlocks(written_, stream));
  mask_stale_ = false;
  return OkStatus();
}

Status ConstantGuard::BeforeCall(cudaStream_t stream) {
  // The state after the last call seen stands for the state before this
  // one: a change between calls then looks written by this call, which
  // costs a snapshot or a staged graph, never a wrong result.
  if (ref_ >= 0) return OkStatus();
  ENCORE_ASSIGN_OR_RETURN(int slot, TakeSlot());
  Status s = Pass(slot, -1, false, stream);
  if (s.ok()) SetReference(slot);
  Drop(slot);
  return s;
}

Status ConstantGuard::AfterCall(cudaStream_t stream) {
  if (ref_ < 0) return OkStatus();
  ENCORE_ASSIGN_OR_RETURN(int cur, TakeSlot());
  Status s = Pass(cur, ref_, /*skip=*/false, stream);
  StatusOr<ChecksumVerdict> v = s.ok() ? sums_.ReadVerdict(stream) : StatusOr<ChecksumVerdict>(s);
  if (v.ok() && v->differing_blocks > 0) s = Learn(ref_, cur, stream);
  if (!v.ok()) s = v.status();
  if (s.ok()) SetReference(cur);
  Drop(cur);
  return s;
}

Status ConstantGuard::Learn(int a, int b, cudaStream_t stream) {
  ENCORE_ASSIGN_OR_RETURN(BlockList changed, sums_.ChangedBlocks(a, b, kMaxListed, stream));
  too_many_ |= changed.truncated();
  for (int64_t block : changed.blocks) {
    ENCORE_ASSIGN_OR_RETURN(BlockLocation at, sums_.map().Locate(block));
    if (read_only_[at.region]) {
      if (violation_.empty()) {
        violation_ = Name(at.region) + " is flagged read_only but a call changed it (the 1 MiB block at byte " +
                     std::to_string(at.offset) + ")";
      }
      continue;
    }
    if (std::binary_search(written_.begin(), written_.end(), block)) continue;
    written_.insert(std::upper_bound(written_.begin(), written_.end(), block), block);
    mask_stale_ = true;
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<GuardedRun>> ConstantGuard::BeginTwice(size_t max_bytes, cudaStream_t stream) {
  if (!violation_.empty()) return FailedPreconditionError(violation_);
  if (too_many_) return FailedPreconditionError("the calls write more than " + std::to_string(kMaxListed) + " MiB of the constants");
  if (2 * written_bytes() > max_bytes) {
    return FailedPreconditionError("saving what the call writes in the constants (2 x " +
                                   std::to_string(written_bytes()) + " bytes) would take more than the " +
                                   std::to_string(max_bytes) + " bytes allowed (a quarter of the free device memory)");
  }
  ENCORE_RETURN_IF_ERROR(BeforeCall(stream));
  ENCORE_RETURN_IF_ERROR(SyncSkipMask(stream));
  std::unique_ptr<GuardedRun> run(new GuardedRun(this));
  run->blocks_ = written_;
  if (spare_before_ && spare_for_ == written_) {
    run->before_ = std::move(spare_before_);
    run->first_ = std::move(spare_first_);
  } else if (!written_.empty()) {
    ENCORE_ASSIGN_OR_RETURN(BlockSnapshot b, BlockSnapshot::Create(sums_.map(), written_, stream));
    ENCORE_ASSIGN_OR_RETURN(BlockSnapshot f, BlockSnapshot::Create(sums_.map(), written_, stream));
    run->before_ = std::make_unique<BlockSnapshot>(std::move(b));
    run->first_ = std::make_unique<BlockSnapshot>(std::move(f));
  }
  Hold(ref_);
  run->before_slot_ = ref_;
  if (run->before_) ENCORE_RETURN_IF_ERROR(run->before_->Save(stream));
  return run;
}

std::string ConstantGuard::OutsideReason(const ChecksumVerdict& v, std::string_view when) const {
  std::string what = Name(v.region);
  if (read_only_[v.region]) {
    return what + " is flagged read_only but " + std::string(when) + " changed it (the 1 MiB block at byte " +
           std::to_string(v.offset_in_region) + ")";
  }
  return what + " changed outside the blocks the warmup calls were seen to write (the 1 MiB block at byte " +
         std::to_string(v.offset_in_region) + ", by " + std::string(when) +
         " or by the application between calls), so it was not saved and the call could not run again without "
         "applying its writes twice";
}

GuardedRun::~GuardedRun() {
  g_->Drop(before_slot_);
  g_->Drop(first_slot_);
  g_->Drop(second_slot_);
  if (before_ && g_->written_ == blocks_) {
    g_->spare_for_ = blocks_;
    g_->spare_before_ = std::move(before_);
    g_->spare_first_ = std::move(first_);
  }
}

Status GuardedRun::QueueFirstPass(cudaStream_t stream) {
  if (first_slot_ >= 0) return OkStatus();
  ENCORE_ASSIGN_OR_RETURN(first_slot_, g_->TakeSlot());
  return g_->Pass(first_slot_, before_slot_, /*skip=*/true, stream);
}

StatusOr<std::string> GuardedRun::RewindFirst(cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(QueueFirstPass(stream));
  ENCORE_ASSIGN_OR_RETURN(ChecksumVerdict v, g_->sums_.ReadVerdict(stream));
  if (v.differing_blocks > 0) {
    std::string why = g_->OutsideReason(v, "the call");
    ENCORE_RETURN_IF_ERROR(g_->Learn(before_slot_, first_slot_, stream));
    g_->SetReference(first_slot_);  // the first run's state stands
    return why;
  }
  if (!first_) return std::string();
  ENCORE_RETURN_IF_ERROR(first_->Save(stream));
  ENCORE_RETURN_IF_ERROR(before_->Restore(stream));
  return std::string();
}

Status GuardedRun::QueueSecond(bool compare_bytes, cudaStream_t stream) {
  if (second_slot_ < 0) {
    ENCORE_ASSIGN_OR_RETURN(second_slot_, g_->TakeSlot());
  }
  ENCORE_RETURN_IF_ERROR(g_->Pass(second_slot_, first_slot_, /*skip=*/true, stream));
  compare_bytes_ = compare_bytes && first_ != nullptr;
  if (compare_bytes_) ENCORE_RETURN_IF_ERROR(first_->Compare(stream));
  second_queued_ = true;
  return OkStatus();
}

StatusOr<std::string> GuardedRun::ReadSecond(cudaStream_t stream) {
  if (!second_queued_) return InternalError("GuardedRun::ReadSecond: the second run's checks were not queued");
  second_queued_ = false;
  ENCORE_ASSIGN_OR_RETURN(ChecksumVerdict v, g_->sums_.ReadVerdict(stream));
  if (v.differing_blocks > 0) return g_->OutsideReason(v, "the second run");
  if (!compare_bytes_) return std::string();
  ENCORE_ASSIGN_OR_RETURN(SnapshotDifference d, first_->ReadDifference(stream));
  if (!d.differs) return std::string();
  return g_->Name(d.region) + " byte " + std::to_string(d.offset_in_region) + ": graph " + std::to_string(d.saved) +
         ", eager " + std::to_string(d.current);
}

StatusOr<std::string> GuardedRun::CompareSecond(bool compare_bytes, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(QueueSecond(compare_bytes, stream));
  return ReadSecond(stream);
}

Status GuardedRun::KeepFirst(cudaStream_t stream) {
  if (first_slot_ < 0) return OkStatus();
  // The regions hold the state before the first run, or the second run's.
  if (first_) ENCORE_RETURN_IF_ERROR(first_->Restore(stream));
  g_->SetReference(first_slot_);
  return OkStatus();
}

void GuardedRun::KeepSecond() {
  if (second_slot_ >= 0) g_->SetReference(second_slot_);
}

}  // namespace encore
