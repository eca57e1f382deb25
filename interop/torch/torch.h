// SPDX-License-Identifier: Apache-2.0
// encore's PyTorch adapter (optional target //interop/torch:encore_torch,
// CMake encore::torch; built only where PyTorch's C++ headers and libraries
// are found): tensor views both ways, the Scope a method body runs PyTorch
// code in, and AOTInductor packages as methods.
#ifndef ENCORE_INTEROP_TORCH_H_
#define ENCORE_INTEROP_TORCH_H_

#include "encore/interop/torch/aoti_method.h"
#include "encore/interop/torch/scope.h"
#include "encore/interop/torch/tensor_ref.h"

#endif  // ENCORE_INTEROP_TORCH_H_
