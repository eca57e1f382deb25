// SPDX-License-Identifier: Apache-2.0
// MemoryStats: what a method's graph memory looks like, for reports.
#ifndef ENCORE_ALLOCATOR_MEMORY_STATS_H_
#define ENCORE_ALLOCATOR_MEMORY_STATS_H_

#include <cstddef>

namespace encore {

struct MemoryStats {
  size_t reserved_bytes = 0;  // slabs held for graphs
  size_t live_bytes = 0;      // in use now: kept graphs' memory + eager scratch
  size_t peak_bytes = 0;      // most live_bytes ever
};

}  // namespace encore

#endif  // ENCORE_ALLOCATOR_MEMORY_STATS_H_
