// SPDX-License-Identifier: Apache-2.0
// The kernel behind the outside-work check (outside_work.h).
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_OUTSIDE_WORK_KERNEL_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_OUTSIDE_WORK_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstddef>

namespace encore {

// Counts the bytes of [data, data + bytes) that are not `value` into
// *count (device memory, zeroed first by the caller); queued on `stream`.
cudaError_t LaunchCountBytesNot(const void* data, size_t bytes, unsigned char value, unsigned long long* count,
                                cudaStream_t stream);

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_OUTSIDE_WORK_KERNEL_H_
