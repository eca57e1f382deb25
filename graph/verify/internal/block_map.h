// SPDX-License-Identifier: Apache-2.0
// BlockMap: a list of device regions (a method's listed constants) cut into
// fixed 1 MiB blocks, numbered across the regions in order, so device-side
// checksums and snapshots can name a block by one integer. Pure host logic,
// O(number of regions) memory whatever the regions weigh.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_BLOCK_MAP_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_BLOCK_MAP_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"

namespace encore {

// Blocks are this size; the last block of each region may be shorter.
inline constexpr size_t kChecksumBlockBytes = size_t{1} << 20;

// One region; `data` is device memory the caller keeps alive and in place.
struct ChecksumRegion {
  const void* data = nullptr;
  size_t bytes = 0;
  std::string name;
};

// Where a block lies: region index, byte offset of the block in it, length.
struct BlockLocation {
  size_t region = 0;
  size_t offset = 0;
  size_t bytes = 0;
};

class BlockMap {
 public:
  BlockMap() = default;

  // A null `data` with non-zero bytes, or a total block count beyond
  // INT32_MAX (a grid dimension), is InvalidArgument naming the region.
  // Zero-byte regions are allowed and own no block.
  [[nodiscard]] static StatusOr<BlockMap> Create(std::vector<ChecksumRegion> regions);

  // Blocks a region of `bytes` is cut into.
  static int64_t BlocksIn(size_t bytes) {
    return static_cast<int64_t>((bytes + kChecksumBlockBytes - 1) / kChecksumBlockBytes);
  }

  int64_t num_blocks() const { return num_blocks_; }
  size_t num_regions() const { return regions_.size(); }
  const ChecksumRegion& region(size_t i) const { return regions_[i]; }
  // Index of region i's first block (that of the next region when i is empty).
  int64_t first_block(size_t i) const { return first_[i]; }

  // OutOfRange for a block outside [0, num_blocks()).
  [[nodiscard]] StatusOr<BlockLocation> Locate(int64_t block) const;
  // The block holding byte `offset` of region `region`; OutOfRange when
  // there is no such byte.
  [[nodiscard]] StatusOr<int64_t> BlockOf(size_t region, size_t offset) const;
  // The device address of a block's first byte.
  const std::byte* BlockData(const BlockLocation& where) const {
    return static_cast<const std::byte*>(regions_[where.region].data) + where.offset;
  }

  // InvalidArgument unless every entry is a block of this map and the list
  // is strictly ascending (so it has no duplicate). `what` names the list.
  [[nodiscard]] Status ValidateBlockList(std::span<const int64_t> blocks, std::string_view what) const;

 private:
  std::vector<ChecksumRegion> regions_;
  std::vector<int64_t> first_;
  int64_t num_blocks_ = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_BLOCK_MAP_H_
