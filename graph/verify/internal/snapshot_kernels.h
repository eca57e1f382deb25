// SPDX-License-Identifier: Apache-2.0
// The kernel behind BlockSnapshot (block_snapshot.h): one launch copies
// every listed block from its region into the snapshot buffer (save), back
// (restore), or compares the two and records the first differing byte.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_SNAPSHOT_KERNELS_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_SNAPSHOT_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore::snapshot {

// Listed block j: `bytes` at `region`, saved at buffer + buffer_offset
// (a multiple of 16).
struct Entry {
  unsigned char* region;
  uint64_t bytes;
  uint64_t buffer_offset;
};

// The first differing byte of the latest compare, as key = j * 1 MiB +
// offset in the block (so keys order as the list does). The last CTA of a
// launch publishes and zeroes the working field, as checksum::DeviceVerdict.
struct DeviceDifference {
  unsigned long long work_first_inv;  // ~key; 0: none
  unsigned int ticket;
  unsigned int pad;
  unsigned long long first_inv;  // ~key; 0: none
  unsigned char saved;           // the byte in the buffer
  unsigned char current;         // the byte in the region
};

enum class Op : int { kSave, kRestore, kCompare };

struct Params {
  const Entry* entries;
  unsigned char* buffer;
  int parts;  // CTAs per listed block (1 to kMaxParts)
  Op op;
  DeviceDifference* difference;  // kCompare only
};

inline constexpr int kMaxParts = 32;

// grid = num_entries * parts CTAs.
cudaError_t LaunchSnapshot(const Params& params, int64_t num_entries, cudaStream_t stream);

}  // namespace encore::snapshot

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_SNAPSHOT_KERNELS_H_
