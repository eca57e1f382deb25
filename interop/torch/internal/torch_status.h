// SPDX-License-Identifier: Apache-2.0
// How a PyTorch exception becomes an encore Status (internal to
// interop/torch: Scope::FromException and AotiMethod use it).
#ifndef ENCORE_INTEROP_TORCH_INTERNAL_TORCH_STATUS_H_
#define ENCORE_INTEROP_TORCH_INTERNAL_TORCH_STATUS_H_

#include <cuda_runtime_api.h>

#include <exception>
#include <string_view>

#include "encore/core/status.h"

namespace encore::torch::internal {

// `e`'s message (without PyTorch's C++ backtrace). When `capturing`, a
// message that speaks of a capture, or a `stream` whose capture is no longer
// active, makes a CaptureRefusal; anything else is Internal. `what` starts
// the message ("torch", "AOTInductor package '/x.pt2'").
Status StatusFromException(std::exception_ptr e, bool capturing, cudaStream_t stream, std::string_view what);

}  // namespace encore::torch::internal

#endif  // ENCORE_INTEROP_TORCH_INTERNAL_TORCH_STATUS_H_
