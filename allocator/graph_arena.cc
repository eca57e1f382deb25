// SPDX-License-Identifier: Apache-2.0
#include "encore/allocator/internal/graph_arena.h"

#include <algorithm>
#include <limits>
#include <string>

#include "encore/core/internal/cuda_api.h"
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
  for (const AllocationLedger::Block& b : ledger_.blocks()) {
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
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (in_capture) ENCORE_CUDA_CALL(ThreadExchangeStreamCaptureMode, &mode);
  StatusOr<void*> p = memory_.Allocate(bytes);
  if (in_capture) (void)cuda().ThreadExchangeStreamCaptureMode(&mode);
  if (!p.ok()) return p.status();
  ledger_.AddPending(capture_id_, *p, bytes);
  return OkStatus();
}

Status GraphArena::BeginCapture(uint64_t capture_id, size_t reserve_bytes) {
  capture_id_ = capture_id;
  cursor_slab_ = 0;
  cursor_offset_ = 0;
  capture_used_ = 0;
  const size_t have = ledger_.total_bytes();
  if (reserve_bytes > have) {
    Status s = AddSlab(reserve_bytes - have, /*in_capture=*/false);
    if (!s.ok()) {
      Status a = AbortCapture();
      (void)a;
      return s;
    }
  }
  return OkStatus();
}

StatusOr<void*> GraphArena::AllocateCapture(size_t bytes) {
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
  ledger_.Commit(capture_id_);
  graph_used_[capture_id_] = capture_used_;
  graph_slabs_[capture_id_] = capture_used_ > 0 ? cursor_slab_ + 1 : 0;
  capture_id_ = 0;
  UpdatePeak();
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
  if (capture_id_ != 0) return FailedPreconditionError("graph memory cannot sleep during a capture");
  return memory_.Sleep();
}

Status GraphArena::Wake() { return memory_.Wake(); }

Status GraphArena::AbortCapture() {
  Status s = FreeSlabs(ledger_.Abort(capture_id_));
  capture_id_ = 0;
  return s;
}

void GraphArena::DropGraph(uint64_t capture_id) {
  graph_used_.erase(capture_id);
  graph_slabs_.erase(capture_id);
}

size_t GraphArena::GrowthForCapture(size_t reserve_bytes) const {
  const size_t have = ledger_.total_bytes();
  if (reserve_bytes <= have) return 0;
  return AlignUp(std::max(reserve_bytes - have, kMinSlabBytes), kAlignment);  // as AddSlab rounds it
}

Status GraphArena::TrimUnused() {
  if (capture_id_ != 0) return OkStatus();
  size_t reached = 0;
  for (const auto& [id, slabs] : graph_slabs_) reached = std::max(reached, slabs);
  return FreeSlabs(ledger_.TakeCommittedFrom(reached));
}

Status GraphArena::ReleaseAll() {
  Status s = FreeSlabs(ledger_.TakeCommitted());
  graph_used_.clear();
  graph_slabs_.clear();
  return s;
}

size_t GraphArena::GraphLiveBytes() const {
  size_t m = capture_id_ ? capture_used_ : 0;
  for (const auto& [id, used] : graph_used_) m = std::max(m, used);
  return m;
}

void GraphArena::UpdatePeak() { peak_ = std::max(peak_, GraphLiveBytes() + eager_call_bytes_); }

MemoryStats GraphArena::stats() const {
  MemoryStats s;
  s.reserved_bytes = ledger_.total_bytes();
  s.live_bytes = GraphLiveBytes() + eager_call_bytes_;
  s.peak_bytes = std::max(peak_, s.live_bytes);
  return s;
}

}  // namespace encore
