// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/driver_entry.h"

#include "encore/core/internal/cuda_api.h"

cudaError_t encore_cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned int version,
                                           cudaDriverEntryPointQueryResult* found) {
#if CUDART_VERSION >= 12050
  return cudaGetDriverEntryPointByVersion(symbol, fn, version, cudaEnableDefault, found);
#else
  (void)version;  // asked at this runtime's version: see EntryPointVersion
  return cudaGetDriverEntryPoint(symbol, fn, cudaEnableDefault, found);
#endif
}

namespace encore {

int EntryPointVersion(int since, int driver, int runtime, bool by_version) {
  if (by_version) return driver >= since ? since : 0;
  return runtime >= since && driver >= runtime ? runtime : 0;
}

void* DriverEntryPoint(const char* symbol, int since) {
  int driver = 0;
  if (cuda().DriverGetVersion(&driver) != cudaSuccess) {
    ClearCudaError();
    return nullptr;
  }
  const int version = EntryPointVersion(since, driver, CUDART_VERSION, kEntryPointsByVersion);
  if (version == 0) return nullptr;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cuda().GetDriverEntryPoint(symbol, &fn, static_cast<unsigned>(version), &found) != cudaSuccess) {
    ClearCudaError();
    return nullptr;
  }
  return found == cudaDriverEntryPointSuccess ? fn : nullptr;
}

}  // namespace encore
