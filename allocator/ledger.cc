// SPDX-License-Identifier: Apache-2.0
#include "encore/allocator/internal/ledger.h"

#include <algorithm>

namespace encore {

void AllocationLedger::AddPending(uint64_t capture_id, void* ptr, size_t bytes) {
  blocks_.push_back(Block{ptr, bytes, capture_id, false});
}

size_t AllocationLedger::Commit(uint64_t capture_id) {
  size_t moved = 0;
  for (Block& b : blocks_) {
    if (!b.committed && b.capture_id == capture_id) {
      b.committed = true;
      moved += b.bytes;
    }
  }
  return moved;
}

template <class Pred>
std::vector<AllocationLedger::Block> AllocationLedger::Extract(Pred take) {
  auto keep = std::stable_partition(blocks_.begin(), blocks_.end(), [&](const Block& b) { return !take(b); });
  std::vector<Block> out(keep, blocks_.end());
  blocks_.erase(keep, blocks_.end());
  return out;
}

std::vector<AllocationLedger::Block> AllocationLedger::Abort(uint64_t capture_id) {
  return Extract([&](const Block& b) { return !b.committed && b.capture_id == capture_id; });
}

std::vector<AllocationLedger::Block> AllocationLedger::AbortFrom(uint64_t capture_id, size_t first) {
  std::vector<Block> out;
  for (size_t i = blocks_.size(); i-- > 0;) {
    Block& b = blocks_[i];
    if (b.committed || b.capture_id != capture_id) continue;
    if (i < first) {
      b.committed = true;
      continue;
    }
    out.insert(out.begin(), b);
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return out;
}

std::vector<AllocationLedger::Block> AllocationLedger::TakeCommitted() {
  return Extract([](const Block& b) { return b.committed; });
}

std::vector<AllocationLedger::Block> AllocationLedger::TakeCommittedFrom(size_t first) {
  std::vector<Block> out;
  for (size_t i = blocks_.size(); i-- > first;) {
    if (!blocks_[i].committed) continue;
    out.insert(out.begin(), blocks_[i]);
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return out;
}

size_t AllocationLedger::pending_bytes() const {
  size_t n = 0;
  for (const Block& b : blocks_) n += b.committed ? 0 : b.bytes;
  return n;
}

size_t AllocationLedger::committed_bytes() const {
  size_t n = 0;
  for (const Block& b : blocks_) n += b.committed ? b.bytes : 0;
  return n;
}

}  // namespace encore
