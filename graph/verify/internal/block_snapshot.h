// SPDX-License-Identifier: Apache-2.0
// BlockSnapshot: a device copy of some blocks of a BlockMap's regions (the
// blocks a call writes, as RegionChecksums::ChangedBlocks found them), so
// verification can put written state back without copying the rest.
// Device memory: the listed blocks' bytes plus 24 bytes per block; host
// memory: the list. Save, Restore and Compare are one kernel launch each,
// queued on the stream (capturable); ReadDifference waits for it.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_BLOCK_SNAPSHOT_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_BLOCK_SNAPSHOT_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "encore/core/internal/device_memory.h"
#include "encore/core/status.h"
#include "encore/graph/verify/internal/block_map.h"
#include "encore/graph/verify/internal/snapshot_kernels.h"

namespace encore {

// The first byte, in the order of the list, where the snapshot and the
// regions differ.
struct SnapshotDifference {
  bool differs = false;
  int64_t block = -1;           // the block holding it
  size_t region = 0;            // which region
  size_t offset_in_region = 0;  // the byte's offset in it
  uint8_t saved = 0;            // the byte in the snapshot
  uint8_t current = 0;          // the byte in the region now
};

class BlockSnapshot {
 public:
  BlockSnapshot() = default;

  // `blocks`: strictly ascending blocks of `map` (InvalidArgument
  // otherwise). Allocates (not while `stream` is capturing), uploads the
  // block table on `stream` and waits for it. Restore writes through the
  // regions' pointers: they must be writable device memory.
  [[nodiscard]] static StatusOr<BlockSnapshot> Create(const BlockMap& map, std::span<const int64_t> blocks,
                                                      cudaStream_t stream);

  const std::vector<int64_t>& blocks() const { return blocks_; }
  // Bytes of the listed blocks, and device bytes held.
  size_t snapshot_bytes() const { return snapshot_bytes_; }
  size_t device_bytes() const { return device_bytes_; }

  // Regions -> snapshot.
  [[nodiscard]] Status Save(cudaStream_t stream);
  // Snapshot -> regions.
  [[nodiscard]] Status Restore(cudaStream_t stream);
  // Finds the first byte where they differ, on the device.
  [[nodiscard]] Status Compare(cudaStream_t stream);
  // Waits for `stream` and reads what the latest Compare found.
  [[nodiscard]] StatusOr<SnapshotDifference> ReadDifference(cudaStream_t stream);

 private:
  Status Launch(snapshot::Op op, cudaStream_t stream);

  BlockMap map_;
  std::vector<int64_t> blocks_;
  int parts_ = 1;
  size_t snapshot_bytes_ = 0;
  size_t device_bytes_ = 0;
  DeviceMemory memory_;
  snapshot::Entry* entries_ = nullptr;
  unsigned char* buffer_ = nullptr;
  snapshot::DeviceDifference* difference_ = nullptr;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_BLOCK_SNAPSHOT_H_
