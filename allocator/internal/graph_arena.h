// SPDX-License-Identifier: Apache-2.0
// GraphArena: the memory a method's calls get through Call::Allocate, and the
// static input/output buffers of its graphs.
//
// Eager and warmup calls get stream-ordered memory (cudaMallocAsync) that is
// returned, stream-ordered, at the end of the call: no host sync.
//
// A capture bump-allocates from the arena's slabs, so an address handed out
// during capture stays valid for the graph's whole life. New slabs a capture
// needs are pending in the ledger until the graph's first launch succeeds;
// a failed capture frees exactly those, once. Before a capture the arena is
// grown, outside the capture, to the method's peak eager use, so most captures
// allocate nothing; if a capture still needs more, the allocation runs with
// the thread's capture mode relaxed for that one call, as PyTorch does.
//
// All graphs of one method bump from offset 0 of the same slabs, so they
// share memory. That is safe because the method never lets two of its graphs
// run at once: calls of a method are serialized by its mutex, and a launch on
// a stream other than the previous launch's first waits for that launch (see
// Method::JoinLastLaunch). Replays allocate nothing, so memory cannot grow.
//
// The slabs are address ranges with memory mapped into them where CUDA
// can (SlabMemory), so a sleep (Manager::Sleep) gives the memory back and
// keeps every address the graphs hold; a wake maps memory back.
#ifndef ENCORE_ALLOCATOR_GRAPH_ARENA_H_
#define ENCORE_ALLOCATOR_GRAPH_ARENA_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "encore/allocator/internal/ledger.h"
#include "encore/allocator/internal/slab_memory.h"
#include "encore/allocator/memory_stats.h"
#include "encore/core/status.h"

namespace encore {

class GraphArena {
 public:
  static constexpr size_t kAlignment = 256;
  static constexpr size_t kMinSlabBytes = size_t{1} << 20;

  GraphArena() = default;
  // Frees every slab. The owner must have waited for the last launch.
  ~GraphArena();
  GraphArena(const GraphArena&) = delete;
  GraphArena& operator=(const GraphArena&) = delete;

  // --- eager and warmup calls
  StatusOr<void*> AllocateEager(size_t bytes, cudaStream_t stream);
  // Returns this call's eager blocks on `stream`, in stream order.
  Status EndEagerCall(cudaStream_t stream);
  size_t eager_peak_bytes() const { return eager_call_peak_; }

  // --- captures
  // Starts capture `capture_id`; grows the arena to `reserve_bytes` first
  // (outside any capture). Must be called before the stream capture begins.
  Status BeginCapture(uint64_t capture_id, size_t reserve_bytes);
  // Memory for the capture in progress; stable for the graph's life.
  StatusOr<void*> AllocateCapture(size_t bytes);
  // The capture's graph launched: its memory is the method's now.
  void CommitCapture();
  // The capture failed: frees the slabs it added, exactly once.
  Status AbortCapture();
  // The graph of `capture_id` was dropped (LRU, Release).
  void DropGraph(uint64_t capture_id);
  // Bytes BeginCapture(id, reserve_bytes) would add to the slabs now.
  size_t GrowthForCapture(size_t reserve_bytes) const;
  // Frees the committed slabs no kept graph reaches (every graph bumps from
  // the first slab, so those are the last ones); nothing during a capture.
  // The owner must have waited for the last launch of the dropped graphs.
  Status TrimUnused();

  // Frees every committed slab; the owner must have waited for the last launch.
  Status ReleaseAll();

  // --- sleep (Manager::Sleep): the memory behind every slab given back,
  // the addresses kept; its bytes. Not during a capture; the owner must
  // have waited for the last launch. What the slabs held is lost.
  StatusOr<size_t> Sleep();
  // Maps memory back behind every slab, at the same addresses.
  Status Wake();
  // Some slab has no memory behind it: no graph of the method may launch.
  bool asleep() const { return memory_.asleep(); }
  // Bytes of slabs a sleep cannot give back (no virtual memory management).
  size_t kept_bytes() const { return memory_.kept_bytes(); }

  MemoryStats stats() const;

 private:
  // Allocates a slab with the thread's capture mode relaxed when `in_capture`.
  Status AddSlab(size_t bytes, bool in_capture);
  // Frees slabs the ledger handed back; the first error wins.
  Status FreeSlabs(const std::vector<AllocationLedger::Block>& blocks);
  void UpdatePeak();
  size_t GraphLiveBytes() const;

  // Every slab, in allocation order: the capture cursor walks its blocks.
  AllocationLedger ledger_;
  SlabMemory memory_;
  // Bump cursor of the capture in progress (an index into ledger_.blocks()).
  size_t cursor_slab_ = 0;
  size_t cursor_offset_ = 0;
  size_t capture_used_ = 0;
  uint64_t capture_id_ = 0;
  // Bytes each kept graph uses (they overlap, so live counts the largest).
  std::map<uint64_t, size_t> graph_used_;
  // How many slabs, from the first, each kept graph reaches.
  std::map<uint64_t, size_t> graph_slabs_;

  std::vector<void*> eager_blocks_;
  size_t eager_call_bytes_ = 0;
  size_t eager_call_peak_ = 0;
  size_t peak_ = 0;
};

}  // namespace encore

#endif  // ENCORE_ALLOCATOR_GRAPH_ARENA_H_
