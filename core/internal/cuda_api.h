// SPDX-License-Identifier: Apache-2.0
// The fault seam: every CUDA runtime call encore makes goes through one table
// of function pointers (kernel launches excepted: their errors are read back
// through GetLastError, which is in the table).
// Production code calls `cuda().GraphLaunch(...)`; that costs one load and one
// indirect call. A test installs a CudaFaultInjector, which swaps the table
// for one that counts calls and fails the Nth call of a named API with an
// error the test chooses, so failure paths that real hardware reaches only by
// bad luck (an instantiate that runs out of memory, a launch that fails) run
// on every test run.
#ifndef ENCORE_CORE_INTERNAL_CUDA_API_H_
#define ENCORE_CORE_INTERNAL_CUDA_API_H_

#include <cuda.h>  // driver types only; no libcuda link (see below)
#include <cuda_runtime_api.h>

#include <atomic>
#include <optional>
#include <string_view>

#include "encore/core/cuda_error.h"

// X(Name, cuda_function, (parameter types)): the calls that go through the
// seam. The parameter types are spelled out because cuda_runtime.h adds C++
// overloads of several of these, which would make `&::cudaMalloc` ambiguous.
#define ENCORE_CUDA_API_LIST(X)                                                              \
  X(StreamCreateWithFlags, cudaStreamCreateWithFlags, (cudaStream_t*, unsigned int))        \
  X(StreamDestroy, cudaStreamDestroy, (cudaStream_t))                                        \
  X(StreamSynchronize, cudaStreamSynchronize, (cudaStream_t))                                \
  X(StreamWaitEvent, cudaStreamWaitEvent, (cudaStream_t, cudaEvent_t, unsigned int))         \
  X(StreamBeginCapture, cudaStreamBeginCapture, (cudaStream_t, cudaStreamCaptureMode))       \
  X(StreamEndCapture, cudaStreamEndCapture, (cudaStream_t, cudaGraph_t*))                    \
  X(StreamIsCapturing, cudaStreamIsCapturing, (cudaStream_t, cudaStreamCaptureStatus*))      \
  X(ThreadExchangeStreamCaptureMode, cudaThreadExchangeStreamCaptureMode,                    \
    (cudaStreamCaptureMode*))                                                                \
  X(EventCreateWithFlags, cudaEventCreateWithFlags, (cudaEvent_t*, unsigned int))            \
  X(EventDestroy, cudaEventDestroy, (cudaEvent_t))                                           \
  X(EventRecord, cudaEventRecord, (cudaEvent_t, cudaStream_t))                               \
  X(EventSynchronize, cudaEventSynchronize, (cudaEvent_t))                                   \
  X(EventQuery, cudaEventQuery, (cudaEvent_t))                                               \
  X(EventElapsedTime, cudaEventElapsedTime, (float*, cudaEvent_t, cudaEvent_t))              \
  X(GraphCreate, cudaGraphCreate, (cudaGraph_t*, unsigned int))                              \
  X(GraphDestroy, cudaGraphDestroy, (cudaGraph_t))                                           \
  X(GraphGetNodes, cudaGraphGetNodes, (cudaGraph_t, cudaGraphNode_t*, size_t*))              \
  X(GraphDebugDotPrint, cudaGraphDebugDotPrint, (cudaGraph_t, const char*, unsigned int))   \
  X(GraphKernelNodeGetParams, cudaGraphKernelNodeGetParams,                                  \
    (cudaGraphNode_t, cudaKernelNodeParams*))                                                \
  X(GraphInstantiate, cudaGraphInstantiateWithFlags,                                         \
    (cudaGraphExec_t*, cudaGraph_t, unsigned long long))                                     \
  X(GraphExecDestroy, cudaGraphExecDestroy, (cudaGraphExec_t))                               \
  X(GraphExecUpdate, cudaGraphExecUpdate,                                                    \
    (cudaGraphExec_t, cudaGraph_t, cudaGraphExecUpdateResultInfo*))                          \
  X(GraphExecKernelNodeSetParams, cudaGraphExecKernelNodeSetParams,                          \
    (cudaGraphExec_t, cudaGraphNode_t, const cudaKernelNodeParams*))                         \
  X(GraphLaunch, cudaGraphLaunch, (cudaGraphExec_t, cudaStream_t))                           \
  X(GraphUpload, cudaGraphUpload, (cudaGraphExec_t, cudaStream_t))                           \
  X(Malloc, cudaMalloc, (void**, size_t))                                                    \
  X(Free, cudaFree, (void*))                                                                 \
  X(MallocAsync, cudaMallocAsync, (void**, size_t, cudaStream_t))                            \
  X(FreeAsync, cudaFreeAsync, (void*, cudaStream_t))                                         \
  X(HostAlloc, cudaHostAlloc, (void**, size_t, unsigned int))                                \
  X(FreeHost, cudaFreeHost, (void*))                                                         \
  X(HostGetDevicePointer, cudaHostGetDevicePointer, (void**, void*, unsigned int))           \
  X(MemcpyAsync, cudaMemcpyAsync, (void*, const void*, size_t, cudaMemcpyKind, cudaStream_t)) \
  X(MemsetAsync, cudaMemsetAsync, (void*, int, size_t, cudaStream_t))                        \
  X(MemGetInfo, cudaMemGetInfo, (size_t*, size_t*))                                          \
  X(PointerGetAttributes, cudaPointerGetAttributes, (cudaPointerAttributes*, const void*))   \
  X(GetDevice, cudaGetDevice, (int*))                                                        \
  X(SetDevice, cudaSetDevice, (int))                                                         \
  X(GetDeviceCount, cudaGetDeviceCount, (int*))                                              \
  X(DeviceSynchronize, cudaDeviceSynchronize, ())                                            \
  X(GetLastError, cudaGetLastError, ())                                                      \
  X(StreamQuery, cudaStreamQuery, (cudaStream_t))                                            \
  X(StreamGetCaptureInfo, encore_cudaStreamGetCaptureInfo,                                   \
    (cudaStream_t, cudaStreamCaptureStatus*, const cudaGraphNode_t**, size_t*))             \
  X(GraphAddEventRecordNode, cudaGraphAddEventRecordNode,                                    \
    (cudaGraphNode_t*, cudaGraph_t, const cudaGraphNode_t*, size_t, cudaEvent_t))             \
  X(GraphClone, cudaGraphClone, (cudaGraph_t*, cudaGraph_t))                                 \
  X(GraphGetRootNodes, cudaGraphGetRootNodes, (cudaGraph_t, cudaGraphNode_t*, size_t*))      \
  X(GraphAddMemcpyNode1D, cudaGraphAddMemcpyNode1D,                                          \
    (cudaGraphNode_t*, cudaGraph_t, const cudaGraphNode_t*, size_t, void*, const void*, size_t, cudaMemcpyKind)) \
  X(GraphAddDependencies, encore_cudaGraphAddDependencies,                                   \
    (cudaGraph_t, const cudaGraphNode_t*, const cudaGraphNode_t*, size_t))                   \
  X(GraphNodeFindInClone, cudaGraphNodeFindInClone, (cudaGraphNode_t*, cudaGraphNode_t, cudaGraph_t)) \
  X(GraphDestroyNode, cudaGraphDestroyNode, (cudaGraphNode_t))                               \
  X(GraphNodeGetType, cudaGraphNodeGetType, (cudaGraphNode_t, cudaGraphNodeType*))           \
  X(GraphChildGraphNodeGetGraph, cudaGraphChildGraphNodeGetGraph, (cudaGraphNode_t, cudaGraph_t*)) \
  X(GraphKernelNodeSetParams, cudaGraphKernelNodeSetParams,                                  \
    (cudaGraphNode_t, const cudaKernelNodeParams*))                                          \
  X(GraphMemcpyNodeGetParams, cudaGraphMemcpyNodeGetParams, (cudaGraphNode_t, cudaMemcpy3DParms*)) \
  X(GraphMemsetNodeGetParams, cudaGraphMemsetNodeGetParams, (cudaGraphNode_t, cudaMemsetParams*)) \
  X(GraphExecMemcpyNodeSetParams, cudaGraphExecMemcpyNodeSetParams,                          \
    (cudaGraphExec_t, cudaGraphNode_t, const cudaMemcpy3DParms*))                            \
  X(GraphExecMemsetNodeSetParams, cudaGraphExecMemsetNodeSetParams,                          \
    (cudaGraphExec_t, cudaGraphNode_t, const cudaMemsetParams*))                             \
  X(GraphMemcpyNodeSetParams, cudaGraphMemcpyNodeSetParams, (cudaGraphNode_t, const cudaMemcpy3DParms*)) \
  X(GraphMemsetNodeSetParams, cudaGraphMemsetNodeSetParams, (cudaGraphNode_t, const cudaMemsetParams*))  \
  X(DriverGraphKernelNodeGetParams, encore_cuGraphKernelNodeGetParams,                       \
    (cudaGraphNode_t, CUDA_KERNEL_NODE_PARAMS*))                                             \
  X(DriverFuncGetParamInfo, encore_cuFuncGetParamInfo, (CUfunction, size_t, size_t*, size_t*)) \
  X(DriverKernelGetParamInfo, encore_cuKernelGetParamInfo, (CUkernel, size_t, size_t*, size_t*)) \
  X(DriverGraphExecKernelNodeSetParams, encore_cuGraphExecKernelNodeSetParams,               \
    (cudaGraphExec_t, cudaGraphNode_t, const CUDA_KERNEL_NODE_PARAMS*))                      \
  X(DriverGraphKernelNodeSetParams, encore_cuGraphKernelNodeSetParams,                       \
    (cudaGraphNode_t, const CUDA_KERNEL_NODE_PARAMS*))                                       \
  X(DriverFuncGetParamCount, encore_cuFuncGetParamCount, (CUfunction, size_t*))              \
  X(DriverKernelGetParamCount, encore_cuKernelGetParamCount, (CUkernel, size_t*))            \
  X(DriverMemGetAddressRange, encore_cuMemGetAddressRange, (CUdeviceptr*, size_t*, CUdeviceptr)) \
  X(RuntimeGetVersion, cudaRuntimeGetVersion, (int*))                                        \
  X(DriverGetVersion, cudaDriverGetVersion, (int*))                                          \
  X(StreamGetCaptureGraph, encore_cudaStreamGetCaptureInfo,                                  \
    (cudaStream_t, cudaStreamCaptureStatus*, cudaGraph_t*, const cudaGraphNode_t**, size_t*)) \
  X(GraphConditionalHandleCreate, encore_cudaGraphConditionalHandleCreate,                   \
    (unsigned long long*, cudaGraph_t, unsigned int, unsigned int))                          \
  X(GraphAddNode, encore_cudaGraphAddNode,                                                   \
    (cudaGraphNode_t*, cudaGraph_t, const cudaGraphNode_t*, size_t, cudaGraphNodeParams*))    \
  X(StreamUpdateCaptureDependencies, encore_cudaStreamUpdateCaptureDependencies,             \
    (cudaStream_t, cudaGraphNode_t*, size_t, unsigned int))                                  \
  X(StreamBeginCaptureToGraph, encore_cudaStreamBeginCaptureToGraph,                         \
    (cudaStream_t, cudaGraph_t, const cudaGraphNode_t*, size_t, cudaStreamCaptureMode))      \
  X(DriverGraphNodeGetParams, encore_cuGraphNodeGetParams, (cudaGraphNode_t, CUgraphNodeParams*)) \
  X(GetDriverEntryPoint, encore_cudaGetDriverEntryPoint,                                     \
    (const char*, void**, unsigned int, cudaDriverEntryPointQueryResult*))                   \
  X(DriverMemGetAllocationGranularity, encore_cuMemGetAllocationGranularity,                 \
    (size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags))                 \
  X(DriverMemAddressReserve, encore_cuMemAddressReserve,                                     \
    (CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long))                         \
  X(DriverMemAddressFree, encore_cuMemAddressFree, (CUdeviceptr, size_t))                    \
  X(DriverMemCreate, encore_cuMemCreate,                                                     \
    (CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long)) \
  X(DriverMemRelease, encore_cuMemRelease, (CUmemGenericAllocationHandle))                   \
  X(DriverMemMap, encore_cuMemMap,                                                           \
    (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))         \
  X(DriverMemUnmap, encore_cuMemUnmap, (CUdeviceptr, size_t))                                \
  X(DriverMemSetAccess, encore_cuMemSetAccess, (CUdeviceptr, size_t, const CUmemAccessDesc*, size_t))

// Driver calls that direct binding needs (CUDA 12.4+ drivers), reached
// through the runtime's driver entry points so that nothing links libcuda (a
// binary linked against the toolkit's stub would need libcuda.so.1 to start,
// which machines without a driver lack). Each returns the driver's CUresult
// as the cudaError_t of the same number (the runtime numbers them alike), or
// cudaErrorNotSupported when the driver has no such entry point.
cudaError_t encore_cuGraphKernelNodeGetParams(cudaGraphNode_t node, CUDA_KERNEL_NODE_PARAMS* params);
cudaError_t encore_cuFuncGetParamInfo(CUfunction func, size_t index, size_t* offset, size_t* size);
cudaError_t encore_cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t* offset, size_t* size);
cudaError_t encore_cuFuncGetParamCount(CUfunction func, size_t* count);
cudaError_t encore_cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr ptr);
cudaError_t encore_cuKernelGetParamCount(CUkernel kernel, size_t* count);
cudaError_t encore_cuGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                  const CUDA_KERNEL_NODE_PARAMS* params);
cudaError_t encore_cuGraphKernelNodeSetParams(cudaGraphNode_t node, const CUDA_KERNEL_NODE_PARAMS* params);

// CUDA's virtual memory management (CUDA 10.2+ drivers; core/cuda_vmm.cc),
// reached the same way: the graph arena's slabs are address ranges with
// physical memory mapped into them, which Manager::Sleep gives back and
// Manager::Wake maps again at the same addresses.
cudaError_t encore_cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                 CUmemAllocationGranularity_flags option);
cudaError_t encore_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags);
cudaError_t encore_cuMemAddressFree(CUdeviceptr ptr, size_t size);
cudaError_t encore_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                               unsigned long long flags);
cudaError_t encore_cuMemRelease(CUmemGenericAllocationHandle handle);
cudaError_t encore_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags);
cudaError_t encore_cuMemUnmap(CUdeviceptr ptr, size_t size);
cudaError_t encore_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count);

// cudaStreamGetCaptureInfo's status and dependency nodes, with one signature
// for every CUDA version (the runtime's own signature changed in 13.0).
cudaError_t encore_cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                            const cudaGraphNode_t** deps, size_t* num_deps);

// The same with the graph being captured into (the capture's own graph, or
// the graph given to cudaStreamBeginCaptureToGraph).
cudaError_t encore_cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, cudaGraph_t* graph,
                                            const cudaGraphNode_t** deps, size_t* num_deps);

// cudaGraphAddDependencies with plain edges, one signature for every CUDA
// version (the runtime's own signature took edge data in 13.0).
cudaError_t encore_cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                            size_t count);

// Conditional nodes (graph/control/): one signature for every CUDA version,
// without the edge data that CUDA 12.3 added in _v2 variants and 13.0 folded
// into the plain names (encore's edges are all default ones). Built against
// headers older than 12.4 they return cudaErrorNotSupported.
cudaError_t encore_cudaGraphConditionalHandleCreate(unsigned long long* handle, cudaGraph_t graph,
                                                    unsigned int default_value, unsigned int flags);
cudaError_t encore_cudaGraphAddNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                    size_t num_deps, cudaGraphNodeParams* params);
cudaError_t encore_cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* deps, size_t num_deps,
                                                       unsigned int flags);
cudaError_t encore_cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                 size_t num_deps, cudaStreamCaptureMode mode);
// cuGraphNodeGetParams, which drivers of CUDA 13.2 and later have (the only
// way to read a conditional node's body graphs back); cudaErrorNotSupported
// from older drivers.
cudaError_t encore_cuGraphNodeGetParams(cudaGraphNode_t node, CUgraphNodeParams* params);

namespace encore {

enum class CudaCall : int {
#define ENCORE_X_(name, fn, args) k##name,
  ENCORE_CUDA_API_LIST(ENCORE_X_)
#undef ENCORE_X_
  kCount
};

// "cudaGraphLaunch" for CudaCall::kGraphLaunch.
std::string_view CudaCallName(CudaCall call);
// The inverse of CudaCallName; also accepts the short name ("GraphLaunch").
std::optional<CudaCall> CudaCallFromName(std::string_view name);

struct CudaApi {
#define ENCORE_X_(name, fn, args) cudaError_t(*name) args;
  ENCORE_CUDA_API_LIST(ENCORE_X_)
#undef ENCORE_X_
};

// The table in force now.
namespace internal {
extern std::atomic<const CudaApi*> g_cuda_api;
}  // namespace internal
inline const CudaApi& cuda() {
  return *internal::g_cuda_api.load(std::memory_order_relaxed);
}
const CudaApi& RealCudaApi();

// The one way library code turns a CUDA runtime result into a Status: OK
// for cudaSuccess; otherwise the error is taken out of the thread's
// last-error slot (it is encore's, and it is reported, so the application's
// next error check must not read it as its own) and the Status names `call`,
// with `context` appended. ENCORE_CUDA_CALL uses it.
[[nodiscard]] Status CudaResult(cudaError_t err, CudaCall call, std::string_view context = {});
// The same for a kernel launch, whose error the launcher already read back
// with GetLastError (which emptied the slot); `what` names the kernel.
[[nodiscard]] Status LaunchResult(cudaError_t err, std::string_view what, std::string_view context = {});
// Empties the thread's last-error slot after a failure encore handles
// itself (a fallback that makes the failed call's error no one's).
void ClearCudaError();

// Counts every call through the seam while alive and fails the calls it is
// told to. One injector at a time, per process; tests only.
class CudaFaultInjector {
 public:
  CudaFaultInjector();
  ~CudaFaultInjector();
  CudaFaultInjector(const CudaFaultInjector&) = delete;
  CudaFaultInjector& operator=(const CudaFaultInjector&) = delete;

  // Makes calls number nth .. nth+times-1 (1-based, counted from now) of
  // `call` return `error` without reaching CUDA.
  void FailNth(CudaCall call, int nth, cudaError_t error, int times = 1);
  // Stops failing anything; counts go on.
  void ClearFailures();
  // Also leaves each injected error in the calling thread's last-error slot,
  // where CUDA leaves a real one: an invalid value by making a real CUDA call
  // that fails that way, any other error (out of memory, a capture
  // invalidated) for the next cuda().GetLastError() on that thread.
  void LeaveInLastError(bool on);
  // Calls of `call` since the injector was made (or ResetCounts).
  int Count(CudaCall call) const;
  // Calls that were failed on purpose.
  int Failed(CudaCall call) const;
  void ResetCounts();
};

}  // namespace encore

// Calls cuda().Name(args...) and, when it fails, returns a Status naming the
// CUDA function from the enclosing function, with the error taken out of the
// thread's last-error slot (it was encore's, and it is reported).
#define ENCORE_CUDA_CALL(Name, ...)                                                                    \
  do {                                                                                                 \
    cudaError_t encore_cuda_err_ = ::encore::cuda().Name(__VA_ARGS__);                                  \
    if (encore_cuda_err_ != cudaSuccess)                                                               \
      return ::encore::CudaResult(encore_cuda_err_, ::encore::CudaCall::k##Name);                      \
  } while (0)

#endif  // ENCORE_CORE_INTERNAL_CUDA_API_H_
