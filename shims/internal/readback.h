// SPDX-License-Identifier: Apache-2.0
// What the shims that move a value between device and host share: the
// refusal inside a stream capture, the device-pointer check, and the copy
// through a small pinned buffer followed by a stream sync.
#ifndef ENCORE_SHIMS_INTERNAL_READBACK_H_
#define ENCORE_SHIMS_INTERNAL_READBACK_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>

#include "encore/core/status.h"

namespace encore::shims::internal {

// The largest transfer ReadBack and WriteAndSync take.
constexpr size_t kStagingBytes = 64;

// CaptureRefusal(message) if `stream` is being captured, if it is the
// legacy default stream while a blocking stream is captured (a sync on it
// would break that capture), or if a ScopedThreadCapture is alive on this
// thread; OK if not; the query's error if it fails. Touches nothing on the
// stream.
Status RefuseIfCapturing(cudaStream_t stream, std::string_view message);

// InvalidArgument "<what> is not device memory (...)" unless CUDA knows `p`
// as device or managed memory.
Status RequireDevicePointer(const void* p, std::string_view what);

// Copies `bytes` (<= kStagingBytes) from device memory to `host` through this
// thread's pinned staging buffer, and waits for `stream`. Not capturable.
Status ReadBack(void* host, const void* device, size_t bytes, cudaStream_t stream);

// Copies `bytes` (<= kStagingBytes) from `host` to device memory through the
// pinned staging buffer, and waits for `stream`. Not capturable.
Status WriteAndSync(void* device, const void* host, size_t bytes, cudaStream_t stream);

}  // namespace encore::shims::internal

#endif  // ENCORE_SHIMS_INTERNAL_READBACK_H_
