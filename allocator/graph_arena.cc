// SPDX-License-Identifier: Apache-2.0
#include "encore/allocator/internal/graph_arena.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/scoped_capture_mode.h"
#include "encore/core/internal/log.h"

namespace encore {
namespace {

// Saturates at SIZE_MAX instead of wrapping: a request that large then
// fails as out of memory, never as a tiny allocation.
size_t AlignUp(size_t n, size_t a) {
  return n > std::numeric_limits<size_t>::max() - (a - 1) ? std::numeric_limits<size_t>::max() : (n + a - 1) / a * a;
}

}  // namespace

GraphArena::~GraphArena() {
  // A capture still open here means its owner is being destroyed mid-call;
  // its pending slabs are freed like committed ones.
  std::vector<AllocationLedger::Block> all = ledger_.blocks();
  all.insert(all.end(), deferred_.begin(), deferred_.end());
  for (const AllocationLedger::Block& b : all) {
    Status s = memory_.Free(b.ptr);
    if (!s.ok()) {
      try {  // a destructor; the application's logger (ScopedEventLog) may throw
        ScopedEventLog().Error("free_failed", {{"method", ScopedMethod()}, {"what", "graph_arena"}, {"bytes", b.bytes},
                                               {"error", s.message()}});
      } catch (...) {
      }
    }
  }
}

StatusOr<void*> GraphArena::AllocateEager(size_t bytes, cudaStream_t stream) {
  auto lock = Guard();
  void* p = nullptr;
  if (bytes == 0) return p;
  size_t aligned = AlignUp(bytes, kAlignment);
  cudaError_t err = cuda().MallocAsync(&p, aligned, stream);
  if (err != cudaSuccess) {
    return CudaResult(err, CudaCall::kMallocAsync, "scratch of " + std::to_string(bytes) + " bytes");
  }
  eager_blocks_.push_back(p);
  eager_call_bytes_ += aligned;
  eager_call_peak_ = std::max(eager_call_peak_, eager_call_bytes_);
  UpdatePeak();
  return p;
}

Status GraphArena::EndEagerCall(cudaStream_t stream) {
  auto lock = Guard();
  Status first;
  for (void* p : eager_blocks_) {
    cudaError_t err = cuda().FreeAsync(p, stream);
    if (err != cudaSuccess && first.ok()) first = CudaResult(err, CudaCall::kFreeAsync);
  }
  eager_blocks_.clear();
  eager_call_bytes_ = 0;
  return first;
}

Status GraphArena::AddSlab(size_t bytes, bool in_capture) {
  bytes = AlignUp(std::max(bytes, kMinSlabBytes), kAlignment);
  // Allocating is not allowed while this thread captures in thread-local
  // mode; relax the mode for this one slab, as PyTorch's allocator does.
  std::optional<ScopedCaptureMode> relaxed;
  if (in_capture) {
    relaxed.emplace(cudaStreamCaptureModeRelaxed);
    if (relaxed->error() != cudaSuccess) return CudaResult(relaxed->error(), CudaCall::kThreadExchangeStreamCaptureMode);
  }
  StatusOr<void*> p = memory_.Allocate(bytes);
  relaxed.reset();
  if (!p.ok()) return p.status();
  ledger_.AddPending(capture_id_, *p, bytes);
  return OkStatus();
}

Status GraphArena::BeginCapture(uint64_t capture_id, size_t reserve_bytes) {
  auto lock = Guard();
  capture_id_ = capture_id;
  cursor_slab_ = 0;
  cursor_offset_ = 0;
  capture_used_ = 0;
  const size_t have = ledger_.total_bytes();
  if (reserve_bytes > have) {
    Status s = AddSlab(reserve_bytes - have, /*in_capture=*/false);
    if (!s.ok()) {
      (void)FreeSlabs(ledger_.Abort(capture_id_));
      capture_id_ = 0;
      return s;
    }
  }
  return OkStatus();
}

StatusOr<void*> GraphArena::AllocateCapture(size_t bytes) {
  auto lock = Guard();
  if (capture_id_ == 0) return FailedPreconditionError("graph memory asked for outside a capture");
  size_t need = AlignUp(std::max<size_t>(bytes, 1), kAlignment);
  const std::vector<AllocationLedger::Block>& slabs = ledger_.blocks();
  while (cursor_slab_ < slabs.size()) {
    const AllocationLedger::Block& s = slabs[cursor_slab_];
    if (need <= s.bytes - cursor_offset_) {  // cursor_offset_ <= s.bytes: no wrap
      void* p = static_cast<char*>(s.ptr) + cursor_offset_;
      cursor_offset_ += need;
      capture_used_ += need;
      return p;
    }
    ++cursor_slab_;
    cursor_offset_ = 0;
  }
  ENCORE_RETURN_IF_ERROR(AddSlab(need, /*in_capture=*/true));
  cursor_slab_ = ledger_.blocks().size() - 1;
  cursor_offset_ = need;
  capture_used_ += need;
  return ledger_.blocks().back().ptr;
}

void GraphArena::CommitCapture() {
  auto lock = Guard();
  ledger_.Commit(capture_id_);
  graph_used_[capture_id_] = capture_used_;
  graph_slabs_[capture_id_] = capture_used_ > 0 ? cursor_slab_ + 1 : 0;
  capture_id_ = 0;
  UpdatePeak();
  FreeDeferred();
}

Status GraphArena::FreeSlabs(const std::vector<AllocationLedger::Block>& blocks) {
  Status first;
  for (const AllocationLedger::Block& b : blocks) {
    Status s = memory_.Free(b.ptr);
    if (first.ok()) first = s;
  }
  return first;
}

StatusOr<size_t> GraphArena::Sleep() {
  auto lock = Guard();
  if (capture_id_ != 0) return FailedPreconditionError("graph memory cannot sleep during a capture");
  return memory_.Sleep();
}

Status GraphArena::Wake() {
  auto lock = Guard();
  return memory_.Wake();
}

Status GraphArena::AbortCapture() {
  auto lock = Guard();
  Status s = FreeSlabs(ledger_.Abort(capture_id_));
  capture_id_ = 0;
  FreeDeferred();
  return s;
}

void GraphArena::DropGraph(uint64_t capture_id) {
  auto lock = Guard();
  graph_used_.erase(capture_id);
  graph_slabs_.erase(capture_id);
}

void GraphArena::HoldCapture() {
  auto lock = Guard();
  if (capture_id_ == 0) return;
  graph_used_[capture_id_] = capture_used_;
  graph_slabs_[capture_id_] = capture_used_ > 0 ? cursor_slab_ + 1 : 0;
  held_.insert(capture_id_);
  capture_id_ = 0;
  UpdatePeak();
  FreeDeferred();
}

void GraphArena::CommitHeld(uint64_t capture_id) {
  auto lock = Guard();
  if (held_.erase(capture_id) == 0) return;
  ledger_.Commit(capture_id);
}

size_t GraphArena::Reached() const {
  size_t reached = capture_id_ != 0 ? cursor_slab_ + 1 : 0;
  for (const auto& [id, slabs] : graph_slabs_) reached = std::max(reached, slabs);
  return reached;
}

Status GraphArena::AbortHeld(uint64_t capture_id) {
  auto lock = Guard();
  if (held_.erase(capture_id) == 0) return OkStatus();
  graph_used_.erase(capture_id);
  graph_slabs_.erase(capture_id);
  // Note [Held captures share slabs]: every capture bumps from the first
  // slab, so one that began after this one was held may have reached this
  // one's pending slabs. Those stay, as the method's; only the slabs beyond
  // everything reached go. None of them moves a slab anyone reaches.
  std::vector<AllocationLedger::Block> freed = ledger_.AbortFrom(capture_id, Reached());
  if (capture_id_ == 0) return FreeSlabs(freed);
  // Another capture is open, maybe on another thread: its end frees them.
  deferred_.insert(deferred_.end(), freed.begin(), freed.end());
  return OkStatus();
}

void GraphArena::FreeDeferred() {
  if (deferred_.empty()) return;
  std::vector<AllocationLedger::Block> blocks = std::move(deferred_);
  deferred_.clear();
  if (Status s = FreeSlabs(blocks); !s.ok()) {
    try {  // a void step of a capture; the application's logger (ScopedEventLog) may throw
      ScopedEventLog().Error("free_failed", {{"method", ScopedMethod()}, {"what", "graph_arena"},
                                             {"error", s.message()}});
    } catch (...) {
    }
  }
}

size_t GraphArena::GrowthForCapture(size_t reserve_bytes) const {
  auto lock = Guard();
  const size_t have = ledger_.total_bytes();
  if (reserve_bytes <= have) return 0;
  return AlignUp(std::max(reserve_bytes - have, kMinSlabBytes), kAlignment);  // as AddSlab rounds it
}

Status GraphArena::TrimUnused() {
  auto lock = Guard();
  if (capture_id_ != 0) return OkStatus();
  return FreeSlabs(ledger_.TakeCommittedFrom(Reached()));
}

Status GraphArena::ReleaseAll() {
  auto lock = Guard();
  Status s = FreeSlabs(ledger_.TakeCommitted());
  // The owner abandons its held captures (AbortHeld) first: the committed
  // slabs just freed may be ones they reach. Any left keep their entries.
  std::erase_if(graph_used_, [&](const auto& g) { return !held_.count(g.first); });
  std::erase_if(graph_slabs_, [&](const auto& g) { return !held_.count(g.first); });
  return s;
}

size_t GraphArena::GraphLiveBytes() const {
  size_t m = capture_id_ ? capture_used_ : 0;
  for (const auto& [id, used] : graph_used_) m = std::max(m, used);
  return m;
}

void GraphArena::UpdatePeak() { peak_ = std::max(peak_, GraphLiveBytes() + eager_call_bytes_); }

MemoryStats GraphArena::stats() const {
  auto lock = Guard();
  MemoryStats s;
  s.reserved_bytes = ledger_.total_bytes();
  s.live_bytes = GraphLiveBytes() + eager_call_bytes_;
  s.peak_bytes = std::max(peak_, s.live_bytes);
  return s;
}

}  // namespace encore
