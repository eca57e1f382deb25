// The staging kernel: copies a call's inputs into a graph's static buffers
// (first node) and its static outputs back out (last node). Between replays
// only the kernel's pointer arguments change, and rewriting a kernel node's
// parameters costs almost nothing next to a cudaMemcpyAsync (about three graph
// launches on an H200), so a replay is one graph launch plus, when an address
// changed, one parameter update per staging node.
#ifndef ENCORE_GRAPH_STAGING_H_
#define ENCORE_GRAPH_STAGING_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore {

struct StageCopy {
  const void* src;
  void* dst;
  uint64_t bytes;
};

// Passed by value as the kernel's only argument, so it must stay small.
struct StageParams {
  static constexpr int kMaxCopies = 12;
  StageCopy copies[kMaxCopies];
  int count;
  // Identifies the node after capture: a value no other kernel argument is
  // likely to hold at this offset, plus which staging node this is.
  uint32_t magic;
  int32_t tag;  // >= 0: input chunk index; < 0: -(output chunk index) - 1
  // When set, thread 0 of block 0 adds 1 to it: the replay sequence number
  // the device checks read to say which call failed.
  unsigned long long* sequence;
};

constexpr uint32_t kStageMagic = 0x656e636fu;  // "enco"

// Launches one staging node. The grid is sized for `max_bytes`, the largest
// copy; the kernel handles any alignment at run time since addresses change.
cudaError_t LaunchStage(const StageParams& params, uint64_t max_bytes, cudaStream_t stream);
// The kernel's address, to find staging nodes in a captured graph.
const void* StageKernelAddress();

}  // namespace encore

#endif  // ENCORE_GRAPH_STAGING_H_
