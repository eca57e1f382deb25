// SPDX-License-Identifier: Apache-2.0
// For the scenario GPU tests: the method body most of them need.
#ifndef ENCORE_TESTS_AFFINE_CALL_H_
#define ENCORE_TESTS_AFFINE_CALL_H_

#include <cstddef>

#include "encore/core/cuda_error.h"
#include "encore/graph/call.h"
#include "encore/tests/test_kernels.h"

namespace encore::testing {

// output(i) = input(i) * a + b over input(i)'s elements, on the call's
// stream; a launch error becomes the Status.
inline Status AffineCall(Call& c, float a, float b, size_t i = 0) {
  cudaError_t e = LaunchAffine(static_cast<const float*>(c.input(i).data), static_cast<float*>(c.output(i).data), a, b,
                               c.input(i).numel(), c.stream());
  return e == cudaSuccess ? OkStatus() : CudaStatus(e, "LaunchAffine");
}

}  // namespace encore::testing

#endif  // ENCORE_TESTS_AFFINE_CALL_H_
