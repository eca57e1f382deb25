// SPDX-License-Identifier: Apache-2.0
// out[mask] = src[mask] without reading the count of the mask back: a select
// kernel that keeps out's value where the mask is false. One launch and no
// sync, so it can be captured into a CUDA graph, and a replay follows the
// mask's contents at that time.
#ifndef ENCORE_SHIMS_MASKED_COPY_H_
#define ENCORE_SHIMS_MASKED_COPY_H_

#include <cuda_runtime_api.h>

#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore::shims {

// out[i] = mask[i] ? src[i] : out[i] for every element, queued on `stream`.
// `mask` holds out.numel() bools (any nonzero byte is true) in device memory.
// out and src must have the same dtype and shape and both be contiguous, with
// data aligned to the element size; any dtype works. Mismatches are
// InvalidArgument naming the operand and both values, checked before anything
// is launched. An empty tensor launches nothing (its pointers may be null, its strides
// anything).
Status MaskedCopy(TensorRef out, const bool* mask, TensorRef src, cudaStream_t stream);

}  // namespace encore::shims

#endif  // ENCORE_SHIMS_MASKED_COPY_H_
