// SPDX-License-Identifier: Apache-2.0
// MemoryBudget: the graph memory of every method of one Manager, against
// ManagerOptions::graph_memory_budget. Method instances reserve a capture's
// growth before it begins (so two methods capturing at once cannot both
// pass) and settle to what their arenas really hold after it. Pure
// bookkeeping, no CUDA; thread-safe.
#ifndef ENCORE_ALLOCATOR_INTERNAL_MEMORY_BUDGET_H_
#define ENCORE_ALLOCATOR_INTERNAL_MEMORY_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace encore {

class MemoryBudget {
 public:
  // `limit` in bytes; 0 means none (everything fits, use is still counted).
  explicit MemoryBudget(size_t limit) : limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  size_t limit() const { return limit_; }
  size_t used() const { return used_.load(std::memory_order_relaxed); }

  // Adds `bytes` and returns true if the total stays within the limit;
  // otherwise changes nothing and returns false.
  bool TryReserve(size_t bytes) {
    size_t cur = used_.load(std::memory_order_relaxed);
    do {
      if (limit_ != 0 && (bytes > limit_ || cur > limit_ - bytes)) return false;
    } while (!used_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
    return true;
  }
  // Bytes allocated (positive) or freed (negative) outside TryReserve: a
  // capture that took more or less than it reserved, a trim, a release.
  void Adjust(int64_t delta) {
    if (delta >= 0) {
      used_.fetch_add(static_cast<size_t>(delta), std::memory_order_relaxed);
    } else {
      used_.fetch_sub(static_cast<size_t>(-delta), std::memory_order_relaxed);
    }
  }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

}  // namespace encore

#endif  // ENCORE_ALLOCATOR_INTERNAL_MEMORY_BUDGET_H_
