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
// LastLaunch::Join, graph/store/internal/last_launch.h). Replays allocate
// nothing, so memory cannot grow.
//
// A capture made in the background (capture=background) is recorded on the
// manager's worker thread and first launched by a later call: between the
// two it is *held* (HoldCapture), its new slabs still pending, while calls
// run and other captures begin. A shared arena (set_shared) serializes
// every call with a mutex, since the worker and the method's callers use it
// at once; otherwise its one owner serializes them and no lock is taken.
//
// The slabs are address ranges with memory mapped into them where CUDA
// can (SlabMemory), so a sleep (Manager::Sleep) gives the memory back and
// keeps every address the graphs hold; a wake maps memory back.
#ifndef ENCORE_ALLOCATOR_INTERNAL_GRAPH_ARENA_H_
#define ENCORE_ALLOCATOR_INTERNAL_GRAPH_ARENA_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
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
  size_t eager_peak_bytes() const {
    auto lock = Guard();
    return eager_call_peak_;
  }

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

  // --- captures held for a later first launch (capture=background)
  // Ends the recording of the capture in progress without committing it:
  // its new slabs stay pending (its own, freed if it is abandoned), what it
  // reaches counts as kept (TrimUnused keeps it), and another capture may
  // begin.
  void HoldCapture();
  // The held capture's graph launched: its memory is the method's.
  void CommitHeld(uint64_t capture_id);
  // The held capture is abandoned (its first launch failed, Release): its
  // pending slabs that no other graph or capture reaches are freed, once;
  // those another one reaches become the method's. While another capture
  // is open (on the worker) they are freed when it ends instead: no
  // cudaFree runs beside a capture in progress.
  Status AbortHeld(uint64_t capture_id);
  // Serializes every call with a mutex from now on (before a second thread
  // uses the arena).
  void set_shared() { shared_ = true; }
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
  // The slabs AbortHeld left for the end of the capture that was open.
  void FreeDeferred();
  void UpdatePeak();
  size_t GraphLiveBytes() const;
  // The slabs, from the first, some kept or held graph or the capture in
  // progress reaches.
  size_t Reached() const;
  // The arena's mutex when it is shared; else nothing is locked.
  std::unique_lock<std::mutex> Guard() const {
    return shared_ ? std::unique_lock<std::mutex>(mu_) : std::unique_lock<std::mutex>();
  }

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
  // Captures held for their first launch (also in graph_used_ and
  // graph_slabs_).
  std::set<uint64_t> held_;
  std::vector<AllocationLedger::Block> deferred_;  // out of the ledger, to free
  bool shared_ = false;
  mutable std::mutex mu_;

  std::vector<void*> eager_blocks_;
  size_t eager_call_bytes_ = 0;
  size_t eager_call_peak_ = 0;
  size_t peak_ = 0;
};

}  // namespace encore

#endif  // ENCORE_ALLOCATOR_INTERNAL_GRAPH_ARENA_H_
