// SPDX-License-Identifier: Apache-2.0
// Whether this process can build CUDA conditional nodes (IF and WHILE): the
// runtime encore was built with and runs against, and the driver, must both
// be CUDA 12.4 or newer. Where they are not, a method that calls If or While
// is not captured and runs eagerly, with the reason given here.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_CONDITIONAL_SUPPORT_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_CONDITIONAL_SUPPORT_H_

#include <string>

namespace encore {

// CUDA's version numbers: 1000 * major + 10 * minor.
inline constexpr int kConditionalNodesMinVersion = 12040;

struct ConditionalSupport {
  bool supported = false;
  // Empty when supported; else what is missing, e.g. "the CUDA runtime is
  // 12.3; conditional nodes need 12.4".
  std::string reason;
};

// "12.4" for 12040.
std::string CudaVersionText(int version);

// The decision alone, from what cudaRuntimeGetVersion and
// cudaDriverGetVersion report (a driver version of 0: no driver) and the
// CUDART_VERSION encore's headers had (`built_with`).
ConditionalSupport DecideConditionalSupport(int built_with, int runtime_version, int driver_version);

// Asks CUDA (cudaRuntimeGetVersion, cudaDriverGetVersion, through the fault
// seam) and decides. A failed query is "not supported", naming the call.
ConditionalSupport QueryConditionalSupport();

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_CONDITIONAL_SUPPORT_H_
