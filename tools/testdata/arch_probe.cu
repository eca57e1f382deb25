// SPDX-License-Identifier: Apache-2.0
// A kernel for tools/cuda_archs_test.sh to find in the object nvcc makes.
#include "encore/tools/arch_probe.h"

namespace encore::testing {

__global__ void ArchProbeKernel(int* out) { *out = 1; }

}  // namespace encore::testing
