// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/binding/internal/site_write.h"

#include <cstdint>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"

namespace encore {

Status WriteKernelSite(cudaGraphExec_t exec, KernelSite& k, const Addresses& to) {
  // Every word of the node, not only the moved ones: the parameter buffer
  // last held another executable's addresses.
  for (const WordRef& r : k.refs) k.args[r.offset / 8] = reinterpret_cast<uintptr_t>(to[r.tensor]) + r.delta;
  CUDA_KERNEL_NODE_PARAMS p = k.params;
  size_t packed_bytes = k.packed_bytes;
  void* packed[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, k.args.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_bytes,
                    CU_LAUNCH_PARAM_END};
  p.kernelParams = k.packed_bytes > 0 ? nullptr : k.arg_ptrs.data();
  p.extra = k.packed_bytes > 0 ? packed : nullptr;
  if (exec == nullptr) {
    ENCORE_CUDA_CALL(DriverGraphKernelNodeSetParams, k.node, &p);
  } else {
    ENCORE_CUDA_CALL(DriverGraphExecKernelNodeSetParams, exec, k.node, &p);
  }
  return OkStatus();
}

Status WriteEndpointSite(cudaGraphExec_t exec, EndpointSite& e, const Addresses& to) {
  auto at = [&](int i) { return static_cast<char*>(const_cast<void*>(to[e.tensor[i]])) + e.delta[i]; };
  if (e.is_memset) {
    e.set.dst = at(1);
    if (exec == nullptr) {
      ENCORE_CUDA_CALL(GraphMemsetNodeSetParams, e.node, &e.set);
    } else {
      ENCORE_CUDA_CALL(GraphExecMemsetNodeSetParams, exec, e.node, &e.set);
    }
    return OkStatus();
  }
  if (e.tensor[0] >= 0) e.copy.srcPtr.ptr = at(0);
  if (e.tensor[1] >= 0) e.copy.dstPtr.ptr = at(1);
  if (exec == nullptr) {
    ENCORE_CUDA_CALL(GraphMemcpyNodeSetParams, e.node, &e.copy);
  } else {
    ENCORE_CUDA_CALL(GraphExecMemcpyNodeSetParams, exec, e.node, &e.copy);
  }
  return OkStatus();
}

Status WriteFoundSites(ScanResult& found, const Addresses& to, std::span<const cudaGraphExec_t> execs) {
  for (KernelSite& k : found.kernels) {
    ENCORE_RETURN_IF_ERROR(WriteKernelSite(nullptr, k, to));
    for (cudaGraphExec_t exec : execs) ENCORE_RETURN_IF_ERROR(WriteKernelSite(exec, k, to));
  }
  for (EndpointSite& e : found.endpoints) {
    ENCORE_RETURN_IF_ERROR(WriteEndpointSite(nullptr, e, to));
    for (cudaGraphExec_t exec : execs) ENCORE_RETURN_IF_ERROR(WriteEndpointSite(exec, e, to));
  }
  return OkStatus();
}

}  // namespace encore
