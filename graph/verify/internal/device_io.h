// SPDX-License-Identifier: Apache-2.0
// What the verification units (region_checksums.h, block_snapshot.h,
// device_diff.h) share: small uploads and read-backs through the fault
// table, refused inside a stream capture (a read-back's sync would
// invalidate it, and a captured copy from host memory would replay stale
// host bytes), and the layout of one device allocation cut into parts.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_DEVICE_IO_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_DEVICE_IO_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>

#include "encore/core/status.h"

namespace encore::verify_io {

// FailedPrecondition naming `what` when `stream` is capturing.
[[nodiscard]] Status RefuseInCapture(cudaStream_t stream, std::string_view what);

// Copies `bytes` from the device to `host` and waits for `stream`.
[[nodiscard]] Status ReadBack(void* host, const void* device, size_t bytes, cudaStream_t stream, std::string_view what);

// Queues a copy of `bytes` from `host` to the device. Pass pageable memory
// (a std::vector): CUDA reads it before cudaMemcpyAsync returns, so it may
// be reused at once; pinned memory would be read later, when the copy runs.
[[nodiscard]] Status Upload(void* device, const void* host, size_t bytes, cudaStream_t stream, std::string_view what);

// Offsets of the parts of one allocation, each aligned to 256 bytes.
class Layout {
 public:
  size_t Add(size_t bytes) {
    const size_t at = total_;
    total_ += (bytes + 255) / 256 * 256;
    return at;
  }
  size_t total() const { return total_ == 0 ? 256 : total_; }

 private:
  size_t total_ = 0;
};

}  // namespace encore::verify_io

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_DEVICE_IO_H_
