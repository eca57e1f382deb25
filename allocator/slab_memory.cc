// SPDX-License-Identifier: Apache-2.0
#include "encore/allocator/internal/slab_memory.h"

#include <cuda.h>

#include <limits>
#include <string>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

CUmemAllocationProp DeviceMemory(int device) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  return p;
}

CUdeviceptr Ptr(void* p) { return reinterpret_cast<CUdeviceptr>(p); }

size_t RoundUp(size_t n, size_t g) {
  if (g <= 1) return n;
  return n > std::numeric_limits<size_t>::max() - (g - 1) ? std::numeric_limits<size_t>::max() : (n + g - 1) / g * g;
}

std::string Bytes(size_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

SlabMemory::~SlabMemory() {
  while (!slabs_.empty()) (void)Free(slabs_.begin()->first);
}

Status SlabMemory::Setup() {
  if (vmm_ != Vmm::kUnknown) return OkStatus();
  ENCORE_CUDA_CALL(GetDevice, &device_);
  const CUmemAllocationProp prop = DeviceMemory(device_);
  const cudaError_t err =
      cuda().DriverMemGetAllocationGranularity(&granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (err == cudaErrorNotSupported) {
    ClearCudaError();
    vmm_ = Vmm::kNo;
    return OkStatus();
  }
  ENCORE_RETURN_IF_ERROR(CudaResult(err, CudaCall::kDriverMemGetAllocationGranularity));
  vmm_ = Vmm::kYes;
  return OkStatus();
}

StatusOr<void*> SlabMemory::Allocate(size_t bytes) {
  if (asleep()) return FailedPreconditionError("graph memory asked for while the arena sleeps");
  ENCORE_RETURN_IF_ERROR(Setup());
  void* base = nullptr;
  if (vmm_ == Vmm::kYes) {
    Status s = AllocateVmm(bytes, &base);
    if (s.ok()) return base;
    // A device without virtual memory management says so at its first
    // slab: cudaMalloc serves it from then on (and a sleep keeps it).
    if (s.code() != StatusCode::kUnimplemented || !slabs_.empty()) return s;
    vmm_ = Vmm::kNo;
  }
  if (cudaError_t err = cuda().Malloc(&base, bytes); err != cudaSuccess) {
    return CudaResult(err, CudaCall::kMalloc, "graph memory slab of " + Bytes(bytes));
  }
  Slab s;
  s.bytes = bytes;
  slabs_.emplace(base, s);
  return base;
}

Status SlabMemory::AllocateVmm(size_t bytes, void** base) {
  Slab s;
  s.bytes = RoundUp(bytes, granularity_);
  if (s.bytes == std::numeric_limits<size_t>::max()) {
    return ResourceExhaustedError("graph memory slab of " + Bytes(bytes) + ": more than any device maps");
  }
  s.vmm = true;
  s.mapped = false;
  const std::string what = "graph memory slab of " + Bytes(s.bytes);
  CUdeviceptr va = 0;
  CudaCall failed = CudaCall::kDriverMemAddressReserve;
  cudaError_t err = cuda().DriverMemAddressReserve(&va, s.bytes, 0, 0, 0);
  if (err == cudaSuccess) {
    err = Map(reinterpret_cast<void*>(va), s, &failed);
    if (err != cudaSuccess) (void)cuda().DriverMemAddressFree(va, s.bytes);
  }
  if (err == cudaErrorNotSupported) {
    ClearCudaError();
    return UnimplementedError("no virtual memory management");
  }
  ENCORE_RETURN_IF_ERROR(CudaResult(err, failed, what));
  *base = reinterpret_cast<void*>(va);
  slabs_.emplace(*base, s);
  return OkStatus();
}

cudaError_t SlabMemory::Map(void* base, Slab& s, CudaCall* failed) {
  const CUmemAllocationProp prop = DeviceMemory(device_);
  const bool create = !s.held;
  if (create) {
    *failed = CudaCall::kDriverMemCreate;
    CUmemGenericAllocationHandle h = 0;
    if (cudaError_t err = cuda().DriverMemCreate(&h, s.bytes, &prop, 0); err != cudaSuccess) return err;
    s.handle = h;
    s.held = true;
  }
  *failed = CudaCall::kDriverMemMap;
  cudaError_t err = cuda().DriverMemMap(Ptr(base), s.bytes, 0, s.handle, 0);
  if (err == cudaSuccess) {
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    *failed = CudaCall::kDriverMemSetAccess;
    err = cuda().DriverMemSetAccess(Ptr(base), s.bytes, &access, 1);
    if (err == cudaSuccess) {
      s.mapped = true;
      return cudaSuccess;
    }
    (void)cuda().DriverMemUnmap(Ptr(base), s.bytes);
  }
  if (create) {
    (void)cuda().DriverMemRelease(s.handle);
    s.held = false;
  }
  return err;
}

Status SlabMemory::Unmap(void* base, Slab& s) {
  const std::string what = "graph memory slab of " + Bytes(s.bytes);
  ENCORE_RETURN_IF_ERROR(CudaResult(cuda().DriverMemUnmap(Ptr(base), s.bytes), CudaCall::kDriverMemUnmap, what));
  s.mapped = false;
  ++sleeping_;
  // A release that fails keeps the memory, and Wake maps it again.
  ENCORE_RETURN_IF_ERROR(CudaResult(cuda().DriverMemRelease(s.handle), CudaCall::kDriverMemRelease, what));
  s.held = false;
  return OkStatus();
}

Status SlabMemory::Free(void* base) {
  auto it = slabs_.find(base);
  if (it == slabs_.end()) return InternalError("no graph memory slab at this address");
  const Slab s = it->second;
  slabs_.erase(it);
  if (!s.vmm) return CudaResult(cuda().Free(base), CudaCall::kFree);
  if (!s.mapped) --sleeping_;
  Status first;
  if (s.mapped) first = CudaResult(cuda().DriverMemUnmap(Ptr(base), s.bytes), CudaCall::kDriverMemUnmap);
  if (s.held) {
    Status r = CudaResult(cuda().DriverMemRelease(s.handle), CudaCall::kDriverMemRelease);
    if (first.ok()) first = r;
  }
  Status a = CudaResult(cuda().DriverMemAddressFree(Ptr(base), s.bytes), CudaCall::kDriverMemAddressFree);
  return first.ok() ? a : first;
}

StatusOr<size_t> SlabMemory::Sleep() {
  size_t bytes = 0;
  for (auto& [base, s] : slabs_) {
    if (!s.vmm || !s.mapped) continue;
    ENCORE_RETURN_IF_ERROR(Unmap(base, s));
    bytes += s.bytes;
  }
  return bytes;
}

Status SlabMemory::Wake() {
  for (auto& [base, s] : slabs_) {
    if (s.mapped) continue;
    CudaCall failed{};
    const cudaError_t err = Map(base, s, &failed);
    ENCORE_RETURN_IF_ERROR(CudaResult(err, failed, "mapping back a graph memory slab of " + Bytes(s.bytes)));
    --sleeping_;
  }
  return OkStatus();
}

size_t SlabMemory::kept_bytes() const {
  size_t n = 0;
  for (const auto& [base, s] : slabs_) n += s.vmm ? 0 : s.bytes;
  return n;
}

}  // namespace encore
