// SPDX-License-Identifier: Apache-2.0
// AllocationLedger: who owns each block of graph memory. A capture's new
// blocks are pending until its graph's first launch succeeds; then they are
// committed (the method's, shared by its graphs). A failed capture takes back
// exactly its own pending blocks, once, so nothing that was never allocated is
// freed and nothing is freed twice. Pure bookkeeping, no CUDA.
#ifndef ENCORE_ALLOCATOR_INTERNAL_LEDGER_H_
#define ENCORE_ALLOCATOR_INTERNAL_LEDGER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace encore {

class AllocationLedger {
 public:
  struct Block {
    void* ptr = nullptr;
    size_t bytes = 0;
    uint64_t capture_id = 0;  // the capture that allocated it
    bool committed = false;
  };

  // Records a block that capture `capture_id` really allocated.
  void AddPending(uint64_t capture_id, void* ptr, size_t bytes);
  // The capture's graph launched: its pending blocks become committed.
  // Returns how many bytes moved.
  size_t Commit(uint64_t capture_id);
  // The capture failed: removes its pending blocks and returns them for the
  // caller to free. A second call for the same id returns nothing.
  std::vector<Block> Abort(uint64_t capture_id);
  // A capture abandoned after others may have reached its blocks (a
  // capture held for a later first launch, GraphArena::AbortHeld): its
  // pending blocks before index `first` become committed (another graph
  // reaches them), those at `first` and after are removed and returned.
  std::vector<Block> AbortFrom(uint64_t capture_id, size_t first);
  // Removes every committed block and returns it (Release, destruction).
  // Pending blocks stay: a capture in progress still owns them.
  std::vector<Block> TakeCommitted();
  // Removes the committed blocks at index `first` and after (blocks no kept
  // graph reaches) and returns them; earlier blocks keep their indexes.
  std::vector<Block> TakeCommittedFrom(size_t first);

  const std::vector<Block>& blocks() const { return blocks_; }
  size_t pending_bytes() const;
  size_t committed_bytes() const;
  size_t total_bytes() const { return pending_bytes() + committed_bytes(); }

 private:
  // Removes the blocks `take` selects, keeping the others in order, and
  // returns them.
  template <class Pred>
  std::vector<Block> Extract(Pred take);

  std::vector<Block> blocks_;
};

}  // namespace encore

#endif  // ENCORE_ALLOCATOR_INTERNAL_LEDGER_H_
