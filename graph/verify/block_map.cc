// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/block_map.h"

#include <algorithm>
#include <climits>

namespace encore {

StatusOr<BlockMap> BlockMap::Create(std::vector<ChecksumRegion> regions) {
  BlockMap map;
  map.first_.reserve(regions.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    const ChecksumRegion& r = regions[i];
    if (r.data == nullptr && r.bytes != 0) {
      return InvalidArgumentError("region " + std::to_string(i) + " '" + r.name + "' has " + std::to_string(r.bytes) +
                                  " bytes at a null address");
    }
    map.first_.push_back(map.num_blocks_);
    map.num_blocks_ += BlocksIn(r.bytes);
    if (map.num_blocks_ > INT32_MAX) {
      return InvalidArgumentError("regions up to '" + r.name + "' hold more than " + std::to_string(INT32_MAX) +
                                  " blocks of " + std::to_string(kChecksumBlockBytes) + " bytes");
    }
  }
  map.regions_ = std::move(regions);
  return map;
}

StatusOr<BlockLocation> BlockMap::Locate(int64_t block) const {
  if (block < 0 || block >= num_blocks_) {
    return OutOfRangeError("block " + std::to_string(block) + " is outside [0, " + std::to_string(num_blocks_) + ")");
  }
  // The last region starting at or before the block is the one holding it:
  // an empty region shares its first block with the region after it.
  const auto it = std::upper_bound(first_.begin(), first_.end(), block);
  const size_t r = static_cast<size_t>(it - first_.begin()) - 1;
  const size_t offset = static_cast<size_t>(block - first_[r]) * kChecksumBlockBytes;
  return BlockLocation{r, offset, std::min(kChecksumBlockBytes, regions_[r].bytes - offset)};
}

StatusOr<int64_t> BlockMap::BlockOf(size_t region, size_t offset) const {
  if (region >= regions_.size() || offset >= regions_[region].bytes) {
    return OutOfRangeError("no byte " + std::to_string(offset) + " in region " + std::to_string(region));
  }
  return first_[region] + static_cast<int64_t>(offset / kChecksumBlockBytes);
}

Status BlockMap::ValidateBlockList(std::span<const int64_t> blocks, std::string_view what) const {
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i] < 0 || blocks[i] >= num_blocks_) {
      return InvalidArgumentError(std::string(what) + ": entry " + std::to_string(i) + " is block " +
                                  std::to_string(blocks[i]) + ", outside [0, " + std::to_string(num_blocks_) + ")");
    }
    if (i > 0 && blocks[i] <= blocks[i - 1]) {
      return InvalidArgumentError(std::string(what) + ": entry " + std::to_string(i) + " (block " +
                                  std::to_string(blocks[i]) +
                                  ") is not above the one before it; the list must "
                                  "be strictly ascending");
    }
  }
  return OkStatus();
}

}  // namespace encore
