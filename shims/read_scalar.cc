// SPDX-License-Identifier: Apache-2.0
#include "encore/shims/read_scalar.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/shims/internal/kernels.h"
#include "encore/shims/internal/readback.h"

namespace encore::shims {

template <class T>
StatusOr<T> ReadScalar(const T* device_ptr, cudaStream_t stream) {
  if (device_ptr == nullptr) return InvalidArgumentError("ReadScalar: device_ptr is null");
  ENCORE_RETURN_IF_ERROR(internal::RefuseIfCapturing(
      stream, "ReadScalar reads a device value back to the host, which a CUDA graph cannot record"));
  ENCORE_RETURN_IF_ERROR(internal::RequireDevicePointer(device_ptr, "ReadScalar: device_ptr"));
  unsigned char bytes[sizeof(T)];
  ENCORE_RETURN_IF_ERROR(internal::ReadBack(bytes, device_ptr, sizeof(T), stream));
  if constexpr (std::is_same_v<T, bool>) {
    // Copying a byte other than 0 or 1 into a bool is undefined.
    return bytes[0] != 0;
  } else {
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
}

template StatusOr<float> ReadScalar<float>(const float*, cudaStream_t);
template StatusOr<double> ReadScalar<double>(const double*, cudaStream_t);
template StatusOr<__half> ReadScalar<__half>(const __half*, cudaStream_t);
template StatusOr<__nv_bfloat16> ReadScalar<__nv_bfloat16>(const __nv_bfloat16*, cudaStream_t);
template StatusOr<int32_t> ReadScalar<int32_t>(const int32_t*, cudaStream_t);
template StatusOr<int64_t> ReadScalar<int64_t>(const int64_t*, cudaStream_t);
template StatusOr<bool> ReadScalar<bool>(const bool*, cudaStream_t);

StatusOr<int64_t> CountNonzero(const bool* mask, int64_t n, cudaStream_t stream) {
  if (n < 0) return InvalidArgumentError("CountNonzero: n is negative (" + std::to_string(n) + ")");
  if (n == 0) return int64_t{0};
  if (mask == nullptr) return InvalidArgumentError("CountNonzero: mask is null with n = " + std::to_string(n));
  ENCORE_RETURN_IF_ERROR(internal::RefuseIfCapturing(
      stream, "CountNonzero reads the count of a device mask back to the host, which a CUDA graph "
              "cannot record"));
  ENCORE_RETURN_IF_ERROR(internal::RequireDevicePointer(mask, "CountNonzero: mask"));

  // Stream-ordered scratch: no device-wide sync, and it lives on the
  // stream's device.
  void* count = nullptr;
  ENCORE_CUDA_CALL(MallocAsync, &count, sizeof(unsigned long long), stream);
  unsigned long long result = 0;
  Status st = [&]() -> Status {
    ENCORE_CUDA_CALL(MemsetAsync, count, 0, sizeof(unsigned long long), stream);
    cudaError_t err = internal::LaunchCountNonzero(mask, n, static_cast<unsigned long long*>(count), stream);
    if (err != cudaSuccess) return CudaStatus(err, "CountNonzero kernel launch");
    return internal::ReadBack(&result, count, sizeof result, stream);
  }();
  // Freed on every path; the free is stream-ordered after the copy.
  cudaError_t free_err = cuda().FreeAsync(count, stream);
  if (!st.ok()) return st;
  if (free_err != cudaSuccess) return CudaStatus(free_err, CudaCallName(CudaCall::kFreeAsync));
  return static_cast<int64_t>(result);
}

}  // namespace encore::shims
