// SPDX-License-Identifier: Apache-2.0
// The staging kernel: copies a call's inputs into a graph's static buffers
// (head nodes, first in the graph) and its static outputs back out (tail
// nodes, last). The head also publishes the caller's output addresses in a
// small device table that the tail reads, so when the caller's buffers move
// only the head's parameters change: one cudaGraphExecKernelNodeSetParams per
// replay at most (measured on the H200 at about 1 us of CPU each), and none
// when the addresses match one of the method's executable variants.
//
// Padded graphs (on_new_shape=pad) take each launch's batch b without any
// CUDA call: the host writes b into a slot of a ring in mapped pinned host
// memory (PadRowsShared) before the launch, the heads read the slot the
// method's launch count names, copy b rows of each input and zero the rest
// of the bucket's rows, and publish each output's b-row byte count for the
// tail; the last tail counts the launch. A replay with a new b costs no
// parameter rewrite at all (graph/pad/internal/pad_rows.h keeps the host side).
#ifndef ENCORE_GRAPH_BINDING_INTERNAL_STAGING_H_
#define ENCORE_GRAPH_BINDING_INTERNAL_STAGING_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore {

struct StagingCopy {
  const void* src;
  void* dst;  // unused by tail nodes, which read the table
  uint64_t bytes;
};

// Shared by the host and a padded method's graphs.
struct PadRowsShared {
  static constexpr uint64_t kSlots = 1024;
  uint64_t launches;      // padded launches whose last tail ran (device writes)
  uint64_t rows[kSlots];  // b of launch n in rows[n % kSlots] (host writes)
};

// The rows of one tensor: b rows span (b - 1) * stride + row bytes (0 for b
// = 0 or an empty row).
struct RowGeometry {
  uint64_t stride;
  uint64_t row;
};

// A padded graph's part of a staging node (null and zero otherwise): the
// ring, the device word where heads tell the tail the launch's number, each
// copied input's and published output's rows (copies[c].bytes is the
// bucket's whole span), and, on the last tail, the flag to count the launch.
struct PadStagingParams {
  PadRowsShared* rows;
  uint64_t* bytes_table;  // head writes, tail reads: bytes of each output to copy
  uint64_t* launch_slot;
  RowGeometry in_rows[8];
  RowGeometry out_rows[8];
  int advance;
};

// Passed by value as the kernel's only argument.
struct StagingParams {
  static constexpr int kMaxCopies = 8;
  StagingCopy copies[kMaxCopies];
  // Head: the caller's output addresses to write to table[table_base + i].
  void* publish[kMaxCopies];
  void** table;
  // Head of chunk 0 only: bumped once per launch; device checks read it to
  // say which call failed.
  unsigned long long* sequence;
  PadStagingParams pad;
  int count;          // copies used
  int publish_count;  // publish entries used (head)
  int table_base;     // table index of publish[0] (head) or copies[0] (tail)
  int is_tail;
};
static_assert(sizeof(PadStagingParams::in_rows) / sizeof(RowGeometry) == StagingParams::kMaxCopies);

// Launches one staging node; the grid is sized for `max_bytes`, the largest
// copy. The kernel checks alignment at run time, since addresses change.
cudaError_t LaunchStaging(const StagingParams& params, uint64_t max_bytes, cudaStream_t stream);

}  // namespace encore

#endif  // ENCORE_GRAPH_BINDING_INTERNAL_STAGING_H_
