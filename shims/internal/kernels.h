// SPDX-License-Identifier: Apache-2.0
// Launchers for the shims' kernels. Internal: the public entry points
// (read_scalar.h, masked_copy.h, philox.h) validate arguments and call these.
// Each returns the launch's error; none synchronizes, so all are capturable.
#ifndef ENCORE_SHIMS_INTERNAL_KERNELS_H_
#define ENCORE_SHIMS_INTERNAL_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace encore::shims::internal {

// *count (device, zeroed by the caller) += the number of nonzero bytes in
// mask[0, n). n > 0.
cudaError_t LaunchCountNonzero(const bool* mask, int64_t n, unsigned long long* count, cudaStream_t stream);

// out[i] = mask[i] ? src[i] : out[i] for n elements of `elem_size` bytes
// (1, 2, 4 or 8), both pointers aligned to it. n > 0.
cudaError_t LaunchMaskedSelect(void* out, const bool* mask, const void* src, int64_t n, size_t elem_size,
                               cudaStream_t stream);

// The generator's device state. The kernels read seed and offset from here,
// so a draw replayed from a graph continues the stream; the launch's last
// block to finish moves offset on, and `ticket` counts finished blocks.
struct PhiloxState {
  unsigned long long seed;
  unsigned long long offset;
  unsigned int ticket;
  unsigned int unused;
};

// n > 0 values from the stream at state->offset; then offset += ceil(n / 4).
cudaError_t LaunchPhiloxUniform(PhiloxState* state, float* out, int64_t n, cudaStream_t stream);
cudaError_t LaunchPhiloxNormal(PhiloxState* state, float* out, int64_t n, cudaStream_t stream);

}  // namespace encore::shims::internal

#endif  // ENCORE_SHIMS_INTERNAL_KERNELS_H_
