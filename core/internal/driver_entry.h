// SPDX-License-Identifier: Apache-2.0
// Driver entry points, asked for only at a CUDA version the driver answers.
//
// Note [Asking the driver only what it has]
// encore reaches the driver calls it needs (kernel node parameters, a
// kernel's parameter layout) through the runtime's driver entry points, so
// that nothing links libcuda. Asked for a symbol at a CUDA version above the
// driver's own, cudaGetDriverEntryPointByVersion fails with
// cudaErrorInvalidValue, and compute-sanitizer reports that failure as an
// API error of the application's run although nothing is wrong. So the
// driver's version (cudaDriverGetVersion) is read first, and a symbol whose
// ABI is newer than the driver (cuFuncGetParamCount, from 13.2) is not asked
// for at all: it counts as absent, as the driver would have said. Without
// cudaGetDriverEntryPointByVersion (a runtime before 12.5), the runtime
// asks at its own version, which then has to reach the symbol's and stay
// within the driver's. Asking at a version above the runtime's is what the
// runtime documents for a symbol newer than the toolkit, so a 13.0 build
// still finds 13.2's calls on a 13.2 driver.
#ifndef ENCORE_CORE_INTERNAL_DRIVER_ENTRY_H_
#define ENCORE_CORE_INTERNAL_DRIVER_ENTRY_H_

#include <cuda_runtime_api.h>

namespace encore {

// Whether this build asks with cudaGetDriverEntryPointByVersion (runtime
// 12.5 and newer).
inline constexpr bool kEntryPointsByVersion = CUDART_VERSION >= 12050;

// The CUDA version (1000 * major + 10 * minor) at which to ask for a driver
// symbol whose ABI appeared in CUDA `since`, given the driver's version and
// the runtime's (CUDART_VERSION), or 0 when the answer could only be a
// refusal or "not found" (see the Note above). `by_version`: the runtime has
// cudaGetDriverEntryPointByVersion, which asks at `since`; else
// cudaGetDriverEntryPoint asks at `runtime`.
[[nodiscard]] int EntryPointVersion(int since, int driver, int runtime, bool by_version);

// The driver's `symbol` at the ABI of CUDA `since`, or null when the
// driver's version is unknown (no driver), EntryPointVersion says not to
// ask, or the driver lacks the symbol. Both calls go through the fault table
// (DriverGetVersion, GetDriverEntryPoint); a failed one leaves no error in
// the thread's last-error slot.
[[nodiscard]] void* DriverEntryPoint(const char* symbol, int since);

}  // namespace encore

// The runtime's entry-point query of this build, with the version argument
// that cudaGetDriverEntryPoint (before 12.5) does not take and ignores.
cudaError_t encore_cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned int version,
                                           cudaDriverEntryPointQueryResult* found);

#endif  // ENCORE_CORE_INTERNAL_DRIVER_ENTRY_H_
