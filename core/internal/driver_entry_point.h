// SPDX-License-Identifier: Apache-2.0
// A driver function reached through the runtime's driver entry points, so
// that nothing links libcuda (a binary linked against the toolkit's stub
// would need libcuda.so.1 to start, which machines without a driver lack).
// For the seam's wrappers (core/cuda_api.cc, core/cuda_vmm.cc) only.
#ifndef ENCORE_CORE_INTERNAL_DRIVER_ENTRY_POINT_H_
#define ENCORE_CORE_INTERNAL_DRIVER_ENTRY_POINT_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace encore::internal {

// The driver's `symbol` at the ABI of CUDA `version` (12.4 by default, the
// first with the parameter-info calls), or null when the driver lacks it.
template <class Fn>
Fn DriverEntryPoint(const char* symbol, int version = 12040) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &found);
#else
  (void)version;
  cudaError_t err = cudaGetDriverEntryPoint(symbol, &fn, cudaEnableDefault, &found);
#endif
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

// The driver's CUresult as the cudaError_t of the same number (the runtime
// numbers them alike).
inline cudaError_t FromDriver(CUresult r) { return static_cast<cudaError_t>(r); }

}  // namespace encore::internal

#endif  // ENCORE_CORE_INTERNAL_DRIVER_ENTRY_POINT_H_
