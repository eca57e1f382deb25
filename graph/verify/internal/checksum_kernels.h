// SPDX-License-Identifier: Apache-2.0
// The kernels behind RegionChecksums (region_checksums.h), each a single
// launch queued on a stream and safe to capture into a graph. The state they
// keep between launches (per-block partial sums, arrival counters, the
// verdict's working fields) is left zero by every launch, so no launch
// needs a memset before it; launches that share that state must be ordered
// (one stream).
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_CHECKSUM_KERNELS_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_CHECKSUM_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore::checksum {

// One entry of the device table of regions, sorted by first_block.
struct DeviceRegion {
  const unsigned char* data;
  uint64_t bytes;
  int64_t first_block;
};

// Device-side verdict of a comparison. The last CTA of a launch moves the
// working fields into the published ones and zeroes them, so the published
// fields always describe the latest comparison.
struct DeviceVerdict {
  unsigned long long work_count;
  unsigned long long work_first_inv;  // ~first differing block; 0: none
  unsigned int ticket;                // CTAs of this launch done
  unsigned int pad;
  unsigned long long count;      // differing blocks not skipped
  unsigned long long first_inv;  // ~smallest of them; 0: none
};

struct ChecksumParams {
  const DeviceRegion* regions;
  int num_regions;
  int parts;                    // CTAs per block (1 to kMaxParts)
  uint64_t* out;                // one checksum per block
  const uint64_t* ref;          // null: compute only; else compare with it
  const uint32_t* skip;         // null: nothing skipped; else a bit per block
  unsigned long long* partial;  // per block, zero between launches
  unsigned int* arrivals;       // per block, zero between launches
  DeviceVerdict* verdict;       // written when ref is set
};

inline constexpr int kMaxParts = 32;

// grid = num_blocks * parts CTAs.
cudaError_t LaunchBlockChecksums(const ChecksumParams& params, int64_t num_blocks, cudaStream_t stream);

// Compares two slots already computed, skipping masked blocks when `skip`.
cudaError_t LaunchCompareSlots(const uint64_t* a, const uint64_t* b, const uint32_t* skip, int64_t num_blocks,
                               DeviceVerdict* verdict, cudaStream_t stream);

// Writes the ascending indices of the blocks where a and b differ into
// list[0, capacity) and their total count into *count (one CTA: the order
// is the blocks' own, so the listed ones are always the smallest).
cudaError_t LaunchListChanged(const uint64_t* a, const uint64_t* b, int64_t num_blocks, int64_t* list,
                              uint64_t capacity, unsigned long long* count, cudaStream_t stream);

// Sets the bits of blocks[0, n) in `mask`.
cudaError_t LaunchSetMaskBits(const int64_t* blocks, uint64_t n, uint32_t* mask, cudaStream_t stream);

}  // namespace encore::checksum

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_CHECKSUM_KERNELS_H_
