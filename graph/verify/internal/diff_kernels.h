// SPDX-License-Identifier: Apache-2.0
// The kernel behind DeviceDiff (device_diff.h): finds the first element (in
// row-major order of a shape, strides followed) where two buffers of the
// same layout differ, with FirstDifference's rule (graph/verify/internal/output_compare.h),
// and keeps that element's bytes from both for the host to format.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_DIFF_KERNELS_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_DIFF_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace encore::diff {

inline constexpr int kMaxRank = 8;

// Published by the launch's last CTA, which also zeroes work_first_inv.
struct DeviceResult {
  unsigned long long work_first_inv;  // ~first differing element; 0: none
  unsigned int ticket;
  unsigned int pad;
  unsigned long long first_inv;  // ~first differing element; 0: none
  unsigned char graph[8];        // that element's bytes
  unsigned char eager[8];
};

struct Params {
  const unsigned char* graph;
  const unsigned char* eager;
  int64_t numel;  // > 0
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];  // in elements
  int rank;
  int elem_bytes;    // 1, 2, 4 or 8
  int dtype;         // encore::DType's value
  int contiguous;    // element k at offset k
  int vector16;      // contiguous, bitwise and both bases 16-byte aligned
  int elem_aligned;  // both bases aligned to elem_bytes
  double tolerance;  // 0: bitwise
  int fill;          // 0..255: `eager` is that byte everywhere (and unread; bytes only); -1: none
  DeviceResult* result;
};

cudaError_t LaunchFirstDifference(const Params& params, cudaStream_t stream);

}  // namespace encore::diff

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_DIFF_KERNELS_H_
