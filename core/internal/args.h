// SPDX-License-Identifier: Apache-2.0
// Args: a call's inputs or outputs as the engine passes them around, a view
// of the caller's TensorRefs (no copy, no ownership).
#ifndef ENCORE_CORE_INTERNAL_ARGS_H_
#define ENCORE_CORE_INTERNAL_ARGS_H_

#include <span>

#include "encore/core/tensor.h"

namespace encore {

using Args = std::span<const TensorRef>;

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_ARGS_H_
