// SPDX-License-Identifier: Apache-2.0
// RegionChecksums: device-side checksums of a list of device regions (a
// method's listed constants), one 64-bit checksum per 1 MiB block
// (block_map.h), so verification can tell which blocks a call wrote, and
// prove the rest unchanged, without copying the regions anywhere.
//
// Everything it needs on the device is allocated by Create: a table of the
// regions, `slots` arrays of one checksum per block, an optional skip mask
// (a bit per block), a list buffer and a small verdict. Host memory is
// O(number of regions). Compute, ComputeAndCompare, CompareWith and
// SetSkipBlocks only queue work on the stream (no host sync; Compute,
// ComputeAndCompare and CompareWith are single kernel launches and can be
// captured); Read* and ChangedBlocks wait for the stream. Calls on one
// object must be ordered (one stream, or events between streams): they
// share device state. The regions must stay allocated while it is used.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_REGION_CHECKSUMS_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_REGION_CHECKSUMS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "encore/core/internal/device_memory.h"
#include "encore/core/status.h"
#include "encore/graph/verify/internal/block_map.h"
#include "encore/graph/verify/internal/checksum_kernels.h"

namespace encore {

struct RegionChecksumsOptions {
  int slots = 2;           // checksum arrays, numbered 0 .. slots - 1
  bool skip_mask = false;  // allocate the skip mask (SetSkipBlocks)
  // Most blocks ChangedBlocks can list, and SetSkipBlocks's upload chunk.
  size_t list_capacity = 4096;
  // CTAs per block (1 to checksum::kMaxParts); 0: picked so that a launch
  // has enough CTAs to fill the GPU. Tests set it to reach every path.
  int ctas_per_block = 0;
};

// What the latest ComputeAndCompare or CompareWith found.
struct ChecksumVerdict {
  int64_t differing_blocks = 0;  // not counting skipped blocks
  int64_t first_block = -1;      // smallest differing block; -1: none
  size_t region = 0;             // where first_block lies (when >= 0)
  size_t offset_in_region = 0;   // byte offset of first_block in `region`
};

// Blocks that differ, ascending: the first `blocks.size()` of `total`.
struct BlockList {
  std::vector<int64_t> blocks;
  int64_t total = 0;
  bool truncated() const { return total > static_cast<int64_t>(blocks.size()); }
};

class RegionChecksums {
 public:
  static constexpr size_t kBlockBytes = kChecksumBlockBytes;

  RegionChecksums() = default;

  // Validates, allocates (cudaMalloc; not while `stream` is capturing) and
  // zeroes the device state on `stream`, then waits for it. Every slot reads
  // as all zeros until computed.
  [[nodiscard]] static StatusOr<RegionChecksums> Create(std::vector<ChecksumRegion> regions,
                                                        RegionChecksumsOptions options, cudaStream_t stream);

  const BlockMap& map() const { return map_; }
  int64_t num_blocks() const { return map_.num_blocks(); }
  int slots() const { return options_.slots; }
  // Device bytes this object holds.
  size_t device_bytes() const { return device_bytes_; }

  // Writes every block's checksum into `slot`: one kernel launch.
  [[nodiscard]] Status Compute(int slot, cudaStream_t stream);
  // Compute(slot) and, in the same kernel, compares each block with slot
  // `reference`, recording the verdict on the device (ReadVerdict).
  [[nodiscard]] Status ComputeAndCompare(int slot, int reference, bool use_skip_mask, cudaStream_t stream);
  // Compares two computed slots: one small kernel over the blocks.
  [[nodiscard]] Status CompareWith(int slot, int reference, bool use_skip_mask, cudaStream_t stream);

  // Replaces the skip mask with `blocks` (each in [0, num_blocks()), any
  // order). Needs options.skip_mask. Not while `stream` is capturing: the
  // list is uploaded from host memory.
  [[nodiscard]] Status SetSkipBlocks(std::span<const int64_t> blocks, cudaStream_t stream);

  // Waits for `stream` and reads the verdict (a few bytes).
  [[nodiscard]] StatusOr<ChecksumVerdict> ReadVerdict(cudaStream_t stream);
  // The blocks whose checksums differ between slots a and b, at most
  // `max_blocks` (<= options.list_capacity) of them, the smallest, with the
  // total count. Waits for `stream`; host memory O(listed).
  [[nodiscard]] StatusOr<BlockList> ChangedBlocks(int a, int b, size_t max_blocks, cudaStream_t stream);
  // Checksums [first, first + count) of `slot`, for tests and diagnostics.
  [[nodiscard]] StatusOr<std::vector<uint64_t>> ReadChecksums(int slot, int64_t first, size_t count,
                                                              cudaStream_t stream);

 private:
  Status CheckSlot(int slot, std::string_view what) const;
  Status CheckPair(int slot, int reference, bool use_skip_mask) const;
  uint64_t* slot_data(int slot) const { return slots_ + static_cast<size_t>(slot) * map_.num_blocks(); }
  Status Launch(int slot, const uint64_t* reference, bool use_skip_mask, cudaStream_t stream);

  BlockMap map_;
  RegionChecksumsOptions options_;
  int parts_ = 1;
  DeviceMemory memory_;
  size_t device_bytes_ = 0;
  checksum::DeviceRegion* table_ = nullptr;
  uint64_t* slots_ = nullptr;
  unsigned long long* partial_ = nullptr;
  unsigned int* arrivals_ = nullptr;
  uint32_t* skip_ = nullptr;
  int64_t* list_ = nullptr;
  unsigned long long* list_count_ = nullptr;
  checksum::DeviceVerdict* verdict_ = nullptr;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_REGION_CHECKSUMS_H_
