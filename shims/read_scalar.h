// SPDX-License-Identifier: Apache-2.0
// Host readbacks of device values: the `.item()` of a scalar and the element
// count of a boolean mask. Both wait for the stream, which a CUDA graph cannot
// record, so inside a stream capture they refuse (IsCaptureRefusal) before
// touching the stream, and the manager runs the method without a graph.
#ifndef ENCORE_SHIMS_READ_SCALAR_H_
#define ENCORE_SHIMS_READ_SCALAR_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "encore/core/status.h"

namespace encore::shims {

// *device_ptr, read after the work already queued on `stream` (any stream,
// cudaStreamLegacy and 0 included). InvalidArgument if `device_ptr` is null
// or not device (or managed) memory; CaptureRefusal inside a capture.
// Instantiated for float, double, __half, __nv_bfloat16, int32_t, int64_t and
// bool (any nonzero byte reads as true).
template <class T>
StatusOr<T> ReadScalar(const T* device_ptr, cudaStream_t stream);

extern template StatusOr<float> ReadScalar<float>(const float*, cudaStream_t);
extern template StatusOr<double> ReadScalar<double>(const double*, cudaStream_t);
extern template StatusOr<__half> ReadScalar<__half>(const __half*, cudaStream_t);
extern template StatusOr<__nv_bfloat16> ReadScalar<__nv_bfloat16>(const __nv_bfloat16*, cudaStream_t);
extern template StatusOr<int32_t> ReadScalar<int32_t>(const int32_t*, cudaStream_t);
extern template StatusOr<int64_t> ReadScalar<int64_t>(const int64_t*, cudaStream_t);
extern template StatusOr<bool> ReadScalar<bool>(const bool*, cudaStream_t);

// How many of mask[0, n) are true (nonzero bytes), after the work queued on
// `stream`. n == 0 gives 0 without touching the device (mask may then be
// null); n < 0, a null mask or one not in device memory is InvalidArgument;
// CaptureRefusal inside a capture.
StatusOr<int64_t> CountNonzero(const bool* mask, int64_t n, cudaStream_t stream);

}  // namespace encore::shims

#endif  // ENCORE_SHIMS_READ_SCALAR_H_
