// SPDX-License-Identifier: Apache-2.0
// The seam's wrappers of CUDA's virtual memory management calls (see
// core/internal/cuda_api.h), each cudaErrorNotSupported where the driver
// lacks it.
#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/driver_entry_point.h"

using encore::internal::DriverFn;
using encore::internal::FromDriver;

cudaError_t encore_cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                 CUmemAllocationGranularity_flags option) {
  static const auto fn =
      DriverFn<CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
          "cuMemGetAllocationGranularity");
  return fn ? FromDriver(fn(granularity, prop, option)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags) {
  static const auto fn = DriverFn<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
      "cuMemAddressReserve");
  return fn ? FromDriver(fn(ptr, size, alignment, addr, flags)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  static const auto fn = DriverFn<CUresult (*)(CUdeviceptr, size_t)>("cuMemAddressFree");
  return fn ? FromDriver(fn(ptr, size)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                               unsigned long long flags) {
  static const auto fn = DriverFn<CUresult (*)(CUmemGenericAllocationHandle*, size_t,
                                                       const CUmemAllocationProp*, unsigned long long)>("cuMemCreate");
  return fn ? FromDriver(fn(handle, size, prop, flags)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemRelease(CUmemGenericAllocationHandle handle) {
  static const auto fn = DriverFn<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  return fn ? FromDriver(fn(handle)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags) {
  static const auto fn =
      DriverFn<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)>(
          "cuMemMap");
  return fn ? FromDriver(fn(ptr, size, offset, handle, flags)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  static const auto fn = DriverFn<CUresult (*)(CUdeviceptr, size_t)>("cuMemUnmap");
  return fn ? FromDriver(fn(ptr, size)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  static const auto fn =
      DriverFn<CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t)>("cuMemSetAccess");
  return fn ? FromDriver(fn(ptr, size, desc, count)) : cudaErrorNotSupported;
}
