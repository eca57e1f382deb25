// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/conditional_support.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

std::string Need() { return "; conditional nodes need " + CudaVersionText(kConditionalNodesMinVersion); }

ConditionalSupport No(std::string reason) { return {false, std::move(reason)}; }

}  // namespace

std::string CudaVersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

ConditionalSupport DecideConditionalSupport(int built_with, int runtime_version, int driver_version) {
  if (built_with < kConditionalNodesMinVersion) {
    return No("encore was built against CUDA " + CudaVersionText(built_with) + " headers" + Need());
  }
  if (runtime_version < kConditionalNodesMinVersion) {
    return No("the CUDA runtime is " + CudaVersionText(runtime_version) + Need());
  }
  if (driver_version <= 0) return No("no CUDA driver is installed" + Need() + " or newer");
  if (driver_version < kConditionalNodesMinVersion) {
    return No("the CUDA driver supports CUDA " + CudaVersionText(driver_version) + Need());
  }
  return {true, {}};
}

ConditionalSupport QueryConditionalSupport() {
  int runtime = 0;
  if (cudaError_t err = cuda().RuntimeGetVersion(&runtime); err != cudaSuccess) {
    (void)cuda().GetLastError();
    return No(std::string("cudaRuntimeGetVersion failed (") + cudaGetErrorName(err) +
              "), so conditional nodes are assumed missing");
  }
  int driver = 0;
  if (cudaError_t err = cuda().DriverGetVersion(&driver); err != cudaSuccess) {
    (void)cuda().GetLastError();
    return No(std::string("cudaDriverGetVersion failed (") + cudaGetErrorName(err) +
              "), so conditional nodes are assumed missing");
  }
  return DecideConditionalSupport(CUDART_VERSION, runtime, driver);
}

}  // namespace encore
