// The fault seam: every CUDA runtime call that capture, instantiation, launch,
// update and allocation make goes through one table of function pointers.
// Production code calls `cuda().GraphLaunch(...)`; that costs one load and one
// indirect call. A test installs a CudaFaultInjector, which swaps the table
// for one that counts calls and fails the Nth call of a named API with an
// error the test chooses, so failure paths that real hardware reaches only by
// bad luck (an instantiate that runs out of memory, a launch that fails) run
// on every test run.
#ifndef ENCORE_CORE_CUDA_API_H_
#define ENCORE_CORE_CUDA_API_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <optional>
#include <string_view>

#include "encore/core/cuda_error.h"

// X(Name, cuda_function): the calls that go through the seam.
#define ENCORE_CUDA_API_LIST(X)                                   \
  X(StreamCreateWithFlags, cudaStreamCreateWithFlags)             \
  X(StreamDestroy, cudaStreamDestroy)                             \
  X(StreamSynchronize, cudaStreamSynchronize)                     \
  X(StreamWaitEvent, cudaStreamWaitEvent)                         \
  X(StreamBeginCapture, cudaStreamBeginCapture)                   \
  X(StreamEndCapture, cudaStreamEndCapture)                       \
  X(StreamIsCapturing, cudaStreamIsCapturing)                     \
  X(ThreadExchangeStreamCaptureMode, cudaThreadExchangeStreamCaptureMode) \
  X(EventCreateWithFlags, cudaEventCreateWithFlags)               \
  X(EventDestroy, cudaEventDestroy)                               \
  X(EventRecord, cudaEventRecord)                                 \
  X(EventSynchronize, cudaEventSynchronize)                       \
  X(EventQuery, cudaEventQuery)                                   \
  X(GraphCreate, cudaGraphCreate)                                 \
  X(GraphDestroy, cudaGraphDestroy)                               \
  X(GraphGetNodes, cudaGraphGetNodes)                             \
  X(GraphKernelNodeGetParams, cudaGraphKernelNodeGetParams)       \
  X(GraphInstantiate, cudaGraphInstantiateWithFlags)              \
  X(GraphExecDestroy, cudaGraphExecDestroy)                       \
  X(GraphExecUpdate, cudaGraphExecUpdate)                         \
  X(GraphExecKernelNodeSetParams, cudaGraphExecKernelNodeSetParams) \
  X(GraphLaunch, cudaGraphLaunch)                                 \
  X(Malloc, cudaMalloc)                                           \
  X(Free, cudaFree)                                               \
  X(MallocAsync, cudaMallocAsync)                                 \
  X(FreeAsync, cudaFreeAsync)                                     \
  X(HostAlloc, cudaHostAlloc)                                     \
  X(FreeHost, cudaFreeHost)                                       \
  X(HostGetDevicePointer, cudaHostGetDevicePointer)               \
  X(MemcpyAsync, cudaMemcpyAsync)                                 \
  X(MemsetAsync, cudaMemsetAsync)                                 \
  X(MemGetInfo, cudaMemGetInfo)                                   \
  X(PointerGetAttributes, cudaPointerGetAttributes)               \
  X(GetDevice, cudaGetDevice)                                     \
  X(GetDeviceCount, cudaGetDeviceCount)

namespace encore {

enum class CudaCall : int {
#define ENCORE_X_(name, fn) k##name,
  ENCORE_CUDA_API_LIST(ENCORE_X_)
#undef ENCORE_X_
  kCount
};

// "cudaGraphLaunch" for CudaCall::kGraphLaunch.
std::string_view CudaCallName(CudaCall call);
// The inverse of CudaCallName; also accepts the short name ("GraphLaunch").
std::optional<CudaCall> CudaCallFromName(std::string_view name);

struct CudaApi {
#define ENCORE_X_(name, fn) decltype(&::fn) name;
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
  // Calls of `call` since the injector was made (or ResetCounts).
  int Count(CudaCall call) const;
  // Calls that were failed on purpose.
  int Failed(CudaCall call) const;
  void ResetCounts();
};

}  // namespace encore

// Calls cuda().Name(args...) and returns a Status naming the CUDA function
// from the enclosing function when it fails.
#define ENCORE_CUDA_CALL(Name, ...)                                                        \
  do {                                                                                     \
    cudaError_t encore_cuda_err_ = ::encore::cuda().Name(__VA_ARGS__);                      \
    if (encore_cuda_err_ != cudaSuccess)                                                   \
      return ::encore::CudaStatus(encore_cuda_err_, ::encore::CudaCallName(::encore::CudaCall::k##Name)); \
  } while (0)

#endif  // ENCORE_CORE_CUDA_API_H_
