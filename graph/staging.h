// The staging kernel: copies a call's inputs into a graph's static buffers
// (head nodes, first in the graph) and its static outputs back out (tail
// nodes, last). The head also publishes the caller's output addresses in a
// small device table that the tail reads, so when the caller's buffers move
// only the head's parameters change: one cudaGraphExecKernelNodeSetParams per
// replay at most (measured on the H200 at about 1 us of CPU each), and none
// when the addresses match one of the method's executable variants.
//
// Padding to buckets (on_new_shape=pad) uses the same nodes: a head copies
// `bytes` (the call's b rows) and zeroes the `zero` bytes after them (the
// bucket's padded rows), and publishes each output's byte count beside its
// address, so the tail copies exactly b rows back. A new b is one rewrite of
// the head's parameters, like a new address.
#ifndef ENCORE_GRAPH_STAGING_H_
#define ENCORE_GRAPH_STAGING_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore {

struct StageCopy {
  const void* src;
  void* dst;  // unused by tail nodes, which read the table
  uint64_t bytes;
  uint64_t zero;  // head: bytes after `bytes` in dst to set to 0 (padded rows)
};

// Passed by value as the kernel's only argument.
struct StageParams {
  static constexpr int kMaxCopies = 8;
  StageCopy copies[kMaxCopies];
  // Head: the caller's output addresses to write to table[table_base + i],
  // and their byte counts to write to bytes_table[table_base + i].
  void* publish[kMaxCopies];
  uint64_t publish_bytes[kMaxCopies];
  void** table;
  // Where tails read how many bytes to copy out; null: copies[c].bytes.
  uint64_t* bytes_table;
  // Head of chunk 0 only: bumped once per launch; device checks read it to
  // say which call failed.
  unsigned long long* sequence;
  int count;          // copies used
  int publish_count;  // publish entries used (head)
  int table_base;     // table index of publish[0] (head) or copies[0] (tail)
  int is_tail;
};

// Launches one staging node; the grid is sized for `max_bytes`, the largest
// copy. The kernel checks alignment at run time, since addresses change.
cudaError_t LaunchStage(const StageParams& params, uint64_t max_bytes, cudaStream_t stream);

}  // namespace encore

#endif  // ENCORE_GRAPH_STAGING_H_
