// SPDX-License-Identifier: Apache-2.0
// The kernel tools/cuda_archs_test.sh looks for in an nvcc object.
#ifndef ENCORE_TOOLS_ARCH_PROBE_H_
#define ENCORE_TOOLS_ARCH_PROBE_H_

namespace encore::testing {

__global__ void ArchProbeKernel(int* out);

}  // namespace encore::testing

#endif  // ENCORE_TOOLS_ARCH_PROBE_H_
