// SPDX-License-Identifier: Apache-2.0
// The device memory behind a Python method's capture pool, which a
// Manager's sleep gives back and its wake maps again at the same
// addresses.
//
// Note [PyTorch's capture memory sleeps with the graphs]
// A Python method's intermediates are not encore's: during its capture the
// function's allocations come from PyTorch's caching allocator, routed to
// the method's torch.cuda.MemPool (python/encore/_pool.py). That pool is
// made over a CUDAPluggableAllocator whose malloc and free are the two
// extern "C" functions below, exported by this module (PyTorch dlopens the
// module's own file, so they share this module's state): each segment the
// allocator asks for is a SlabMemory slab (allocator/internal/
// slab_memory.h: an address range reserved once, with physical memory
// mapped into it through the fault table's cuMemCreate, cuMemMap and
// cuMemSetAccess), kept by the TorchPoolMemory of the method and device
// whose capture this thread routes now (set around the routing only; a
// segment asked for with no route comes from memory no sleep takes). A
// sleep of the method's Manager, after the graphs' last launches, unmaps
// and releases the physical memory of every segment and keeps the ranges
// reserved and the segments in PyTorch's pool, so memory other tensors
// take while asleep lies elsewhere and no graph writes it; a wake maps new
// memory at the same addresses. What the segments held is lost, as with
// the graph arena: each replay writes its intermediates before it reads
// them. A call of any method of the Manager while asleep wakes them first.
//
// The memory lives as long as PyTorch holds a segment of it, which may be
// longer than the method (a block PyTorch keeps for itself, such as a
// cuBLAS workspace first made during a capture): the registry of segments
// holds it, and a TorchPoolMemory that Python lets go while asleep is
// woken first, so no block PyTorch may still hand out lies unmapped.
#ifndef ENCORE_PYTHON_SRC_PY_TORCH_POOL_H_
#define ENCORE_PYTHON_SRC_PY_TORCH_POOL_H_

#include <nanobind/nanobind.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "encore/allocator/internal/slab_memory.h"
#include "encore/core/status.h"

namespace encore::python {

// The segments PyTorch's allocator took for one method's pool on one device.
class TorchPoolMemory {
 public:
  explicit TorchPoolMemory(int device) : device_(device) {}
  TorchPoolMemory(const TorchPoolMemory&) = delete;
  TorchPoolMemory& operator=(const TorchPoolMemory&) = delete;

  // A segment of at least `bytes` on this memory's device; FailedPrecondition
  // while asleep (a capture then gets no memory and fails).
  StatusOr<void*> Allocate(size_t bytes);
  // Frees the segment at `base` (of `bytes`, as PyTorch asked for it).
  Status Free(void* base, size_t bytes);
  // Gives back the physical memory of every segment, keeping the ranges;
  // its bytes. The caller has waited for every launch that uses them.
  StatusOr<size_t> Sleep();
  // Maps memory back behind every segment at the same addresses.
  Status Wake();
  bool asleep() const;
  // A wake could not map its memory back (taken by others while asleep):
  // the method's graphs must go before its next launch, and its captures
  // use another pool (python/encore/_method.py).
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  void set_lost() { lost_.store(true, std::memory_order_release); }
  // Python let go of it (~PyTorchPool): no graph uses it any more, and
  // what PyTorch still keeps in it stays mapped; no sleep takes it again.
  bool orphaned() const { return orphaned_.load(std::memory_order_acquire); }
  void set_orphaned() { orphaned_.store(true, std::memory_order_release); }
  int device() const { return device_; }
  // Bytes of the segments (mapped or not), and how many there are.
  size_t bytes() const;
  size_t segments() const;

 private:
  const int device_;
  mutable std::mutex mu_;
  SlabMemory slabs_;
  size_t bytes_ = 0;
  size_t segments_ = 0;
  std::atomic<bool> lost_{false};
  std::atomic<bool> orphaned_{false};
};

// The pools of one Manager's Python methods, slept and woken with it.
class TorchPools {
 public:
  // A new pool memory on `device`, slept and woken with the others.
  std::shared_ptr<TorchPoolMemory> Make(int device);
  // Every live pool memory's Sleep; on a failure the ones slept are woken
  // again and the error returned.
  StatusOr<int64_t> Sleep();
  // Every live pool memory's Wake, all tried; one that fails is lost
  // (TorchPoolMemory::lost) and the first error returned.
  Status Wake();
  // The pools sleep, or a wake lost one: a method's call looks before it
  // launches anything (the replay's fast path leaves such a call to the
  // general path, which wakes them and drops a lost pool's graphs).
  bool attention() const { return attention_.load(std::memory_order_acquire); }
  bool asleep() const { return asleep_.load(std::memory_order_acquire); }
  // Clears attention once no pool is asleep or lost.
  void Settle();

 private:
  std::vector<std::shared_ptr<TorchPoolMemory>> Live();
  std::mutex mu_;  // serializes Sleep and Wake
  std::mutex list_mu_;
  std::vector<std::weak_ptr<TorchPoolMemory>> pools_;
  std::atomic<bool> asleep_{false};
  std::atomic<bool> attention_{false};
};

// What Python holds of a pool memory (python/encore/_pool.py): the
// memory's route for this thread's captures, and a wake when Python lets
// go of it while asleep (Note [PyTorch's capture memory sleeps with the
// graphs]).
class PyTorchPool {
 public:
  explicit PyTorchPool(std::shared_ptr<TorchPoolMemory> memory) : memory_(std::move(memory)) {}
  ~PyTorchPool();
  PyTorchPool(const PyTorchPool&) = delete;
  PyTorchPool& operator=(const PyTorchPool&) = delete;
  // This thread's segments come from this memory until unroute.
  void route();
  void unroute();
  const TorchPoolMemory& memory() const { return *memory_; }

 private:
  std::shared_ptr<TorchPoolMemory> memory_;
};

void BindTorchPool(nanobind::module_& m);

}  // namespace encore::python

// The allocator functions of torch.cuda.memory.CUDAPluggableAllocator
// (its signature: size, device, stream), exported from the module.
extern "C" {
__attribute__((visibility("default"))) void* encore_torch_pool_malloc(ssize_t size, int device,
                                                                     void* stream) noexcept;
__attribute__((visibility("default"))) void encore_torch_pool_free(void* ptr, ssize_t size, int device,
                                                                   void* stream) noexcept;
}

#endif  // ENCORE_PYTHON_SRC_PY_TORCH_POOL_H_
