// SPDX-License-Identifier: Apache-2.0
// SlabMemory: the device memory behind a graph arena's slabs, and the means
// to give it back while keeping the addresses (Manager::Sleep).
//
// Note [Slabs that sleep]: a graph's executables hold the addresses of its
// static buffers and capture scratch, so the memory behind them can only be
// given back if it can come back at the same addresses. CUDA's virtual
// memory management does that: a slab is an address range reserved once
// (cuMemAddressReserve) with physical memory mapped into it (cuMemCreate,
// cuMemMap, cuMemSetAccess for the arena's device). Sleep unmaps and
// releases the physical memory and keeps the range; Wake creates and maps
// new memory into the same range. Its contents are not kept: a graph's
// intermediates and scratch are written by each launch before they are
// read. Where the driver or device has no virtual memory management
// (cudaErrorNotSupported) the slabs come from cudaMalloc, as before, and a
// sleep gives none of them back. A slab's range and memory are rounded up
// to the allocation granularity (2 MiB on current GPUs); the arena uses
// the bytes it asked for, so its reports and the memory budget count what
// they counted with cudaMalloc, which rounds likewise.
//
// Graph memory that CUDA allocates itself (memory nodes from a capture of
// cudaMallocAsync) is not the arena's and is never given back by a sleep.
#ifndef ENCORE_ALLOCATOR_INTERNAL_SLAB_MEMORY_H_
#define ENCORE_ALLOCATOR_INTERNAL_SLAB_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/status.h"

namespace encore {

class SlabMemory {
 public:
  SlabMemory() = default;
  // Frees what is left; the owner must have waited for the last launch.
  ~SlabMemory();
  SlabMemory(const SlabMemory&) = delete;
  SlabMemory& operator=(const SlabMemory&) = delete;

  // A slab of at least `bytes` on the current device. Not while asleep.
  StatusOr<void*> Allocate(size_t bytes);
  // Frees the slab at `base` (its range, and its memory if mapped).
  Status Free(void* base);

  // Gives back the physical memory behind every slab that can sleep,
  // keeping the ranges; returns its bytes. The owner must have waited for
  // every launch that uses the slabs. A failure stops there: the slabs
  // given back so far stay asleep, the others awake.
  StatusOr<size_t> Sleep();
  // Maps memory back into every sleeping slab, at the same addresses. A
  // failure (out of memory) leaves the slabs not yet mapped asleep.
  Status Wake();
  // Some slab has no memory behind it: nothing may use the arena.
  bool asleep() const { return sleeping_ > 0; }
  // Bytes of the slabs whose memory a sleep cannot give back (cudaMalloc).
  size_t kept_bytes() const;

 private:
  struct Slab {
    size_t bytes = 0;     // the range, and the memory mapped into it
    uint64_t handle = 0;  // the physical memory, while `held`
    bool held = false;    // a sleep whose release failed keeps it, to map again
    bool vmm = false;     // false: from cudaMalloc
    bool mapped = true;
  };
  // Reserves a range and maps memory into it; Unimplemented where the
  // device or driver has no virtual memory management.
  Status AllocateVmm(size_t bytes, void** base);
  // Creates memory (unless held), maps it and grants the device access,
  // undoing its own steps when one fails; the failed step's result and call.
  cudaError_t Map(void* base, Slab& s, CudaCall* failed);
  // Unmaps and releases the memory; the slab sleeps once unmapped.
  Status Unmap(void* base, Slab& s);
  // The device, and whether and at what granularity it maps memory.
  Status Setup();

  std::map<void*, Slab> slabs_;
  int device_ = -1;
  size_t granularity_ = 0;
  enum class Vmm { kUnknown, kYes, kNo } vmm_ = Vmm::kUnknown;
  size_t sleeping_ = 0;  // slabs without memory behind them
};

}  // namespace encore

#endif  // ENCORE_ALLOCATOR_INTERNAL_SLAB_MEMORY_H_
