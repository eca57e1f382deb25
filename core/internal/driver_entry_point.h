// SPDX-License-Identifier: Apache-2.0
// A driver function reached through the runtime's driver entry points, so
// that nothing links libcuda (a binary linked against the toolkit's stub
// would need libcuda.so.1 to start, which machines without a driver lack).
// For the seam's wrappers (core/cuda_api.cc, core/cuda_vmm.cc) only.
#ifndef ENCORE_CORE_INTERNAL_DRIVER_ENTRY_POINT_H_
#define ENCORE_CORE_INTERNAL_DRIVER_ENTRY_POINT_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "encore/core/internal/driver_entry.h"

namespace encore::internal {

// The driver's `symbol` at the ABI of CUDA `since` (12.4 by default, the
// first with the parameter-info calls), or null where the driver has none:
// see Note [Asking the driver only what it has] (driver_entry.h).
template <class Fn>
Fn DriverFn(const char* symbol, int since = 12040) {
  return reinterpret_cast<Fn>(encore::DriverEntryPoint(symbol, since));
}

// The driver's CUresult as the cudaError_t of the same number (the runtime
// numbers them alike).
inline cudaError_t FromDriver(CUresult r) { return static_cast<cudaError_t>(r); }

}  // namespace encore::internal

#endif  // ENCORE_CORE_INTERNAL_DRIVER_ENTRY_POINT_H_
