// SPDX-License-Identifier: Apache-2.0
// CUDA error codes as Status. CUDA calls themselves go through the fault
// table and ENCORE_CUDA_CALL (core/internal/cuda_api.h), the one way to call CUDA.
#ifndef ENCORE_CORE_CUDA_ERROR_H_
#define ENCORE_CORE_CUDA_ERROR_H_

#include <cuda_runtime_api.h>

#include <string_view>

#include "encore/core/status.h"

namespace encore {

// The code a CUDA error maps to: out of memory -> kResourceExhausted; capture
// errors -> kFailedPrecondition; bad arguments -> kInvalidArgument; no device
// or driver, or a context a device fault has poisoned -> kUnavailable; not
// supported -> kUnimplemented; anything else -> kInternal.
StatusCode CudaErrorCode(cudaError_t err);

// True for the errors that mean a capture cannot go on (unsupported call,
// invalidated, unjoined, wrong thread...): a method that did this is not
// graphable, which is expected, not a bug.
bool IsCaptureError(cudaError_t err);

// True for sticky errors after which the context cannot be used again (a
// device trap, an illegal address): every later CUDA call in the process fails.
bool IsContextLostError(cudaError_t err);

// True for the errors of a kernel with no code this GPU can run (no machine
// code for its architecture and no PTX the driver can compile).
bool IsMissingKernelImageError(cudaError_t err);

// "cudaGraphLaunch: cudaErrorInvalidValue (invalid argument)", with `context`
// appended after "; " when given. OK for cudaSuccess. A missing kernel image
// also names the architectures encore was built for (kBuiltCudaArchs).
Status CudaStatus(cudaError_t err, std::string_view api, std::string_view context = {});

}  // namespace encore

#endif  // ENCORE_CORE_CUDA_ERROR_H_
