// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/driver_entry_point.h"

#include <array>
#include <cassert>
#include <utility>

#include "encore/core/internal/driver_entry.h"

cudaError_t encore_cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                            const cudaGraphNode_t** deps, size_t* num_deps) {
#if CUDART_VERSION >= 13000
  return cudaStreamGetCaptureInfo(stream, status, nullptr, nullptr, deps, nullptr, num_deps);
#elif CUDART_VERSION >= 12030
  return cudaStreamGetCaptureInfo_v3(stream, status, nullptr, nullptr, deps, nullptr, num_deps);
#else
  return cudaStreamGetCaptureInfo_v2(stream, status, nullptr, nullptr, deps, num_deps);
#endif
}

cudaError_t encore_cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                            size_t count) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddDependencies(graph, from, to, nullptr, count);
#else
  return cudaGraphAddDependencies(graph, from, to, count);
#endif
}

using encore::internal::DriverFn;
using encore::internal::FromDriver;

cudaError_t encore_cuGraphKernelNodeGetParams(cudaGraphNode_t node, CUDA_KERNEL_NODE_PARAMS* params) {
  static const auto fn = DriverFn<CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*)>(
      "cuGraphKernelNodeGetParams");
  return fn ? FromDriver(fn(node, params)) : cudaErrorNotSupported;
}

cudaError_t encore_cuFuncGetParamInfo(CUfunction func, size_t index, size_t* offset, size_t* size) {
  static const auto fn = DriverFn<CUresult (*)(CUfunction, size_t, size_t*, size_t*)>("cuFuncGetParamInfo");
  return fn ? FromDriver(fn(func, index, offset, size)) : cudaErrorNotSupported;
}

cudaError_t encore_cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) {
  static const auto fn = DriverFn<CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr)>("cuMemGetAddressRange");
  return fn ? FromDriver(fn(base, size, ptr)) : cudaErrorNotSupported;
}

// Drivers of CUDA 13.2 and newer only (13.0's headers do not declare it):
// without it the reference scan reads a function's parameters until the
// driver says there are no more.
cudaError_t encore_cuFuncGetParamCount(CUfunction func, size_t* count) {
  static const auto fn = DriverFn<CUresult (*)(CUfunction, size_t*)>("cuFuncGetParamCount", 13020);
  return fn ? FromDriver(fn(func, count)) : cudaErrorNotSupported;
}

cudaError_t encore_cuKernelGetParamCount(CUkernel kernel, size_t* count) {
  static const auto fn = DriverFn<CUresult (*)(CUkernel, size_t*)>("cuKernelGetParamCount", 13020);
  return fn ? FromDriver(fn(kernel, count)) : cudaErrorNotSupported;
}

cudaError_t encore_cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t* offset, size_t* size) {
  static const auto fn = DriverFn<CUresult (*)(CUkernel, size_t, size_t*, size_t*)>("cuKernelGetParamInfo");
  return fn ? FromDriver(fn(kernel, index, offset, size)) : cudaErrorNotSupported;
}

cudaError_t encore_cuGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                  const CUDA_KERNEL_NODE_PARAMS* params) {
  static const auto fn = DriverFn<CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*)>(
      "cuGraphExecKernelNodeSetParams");
  return fn ? FromDriver(fn(exec, node, params)) : cudaErrorNotSupported;
}

cudaError_t encore_cuGraphKernelNodeSetParams(cudaGraphNode_t node, const CUDA_KERNEL_NODE_PARAMS* params) {
  static const auto fn =
      DriverFn<CUresult (*)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*)>("cuGraphKernelNodeSetParams");
  return fn ? FromDriver(fn(node, params)) : cudaErrorNotSupported;
}

cudaError_t encore_cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, cudaGraph_t* graph,
                                            const cudaGraphNode_t** deps, size_t* num_deps) {
#if CUDART_VERSION >= 13000
  return cudaStreamGetCaptureInfo(stream, status, nullptr, graph, deps, nullptr, num_deps);
#elif CUDART_VERSION >= 12030
  return cudaStreamGetCaptureInfo_v3(stream, status, nullptr, graph, deps, nullptr, num_deps);
#else
  return cudaStreamGetCaptureInfo_v2(stream, status, nullptr, graph, deps, num_deps);
#endif
}

// Conditional nodes came with CUDA 12.4's runtime (12.3's driver had them
// first); encore's minimum toolkit is 12.4, so the #else branches only keep
// an older header building.
cudaError_t encore_cudaGraphConditionalHandleCreate(unsigned long long* handle, cudaGraph_t graph,
                                                    unsigned int default_value, unsigned int flags) {
#if CUDART_VERSION >= 12040
  return cudaGraphConditionalHandleCreate(handle, graph, default_value, flags);
#else
  (void)handle, (void)graph, (void)default_value, (void)flags;
  return cudaErrorNotSupported;
#endif
}

cudaError_t encore_cudaGraphAddNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                    size_t num_deps, cudaGraphNodeParams* params) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddNode(node, graph, deps, nullptr, num_deps, params);
#elif CUDART_VERSION >= 12040
  return cudaGraphAddNode(node, graph, deps, num_deps, params);
#else
  (void)node, (void)graph, (void)deps, (void)num_deps, (void)params;
  return cudaErrorNotSupported;
#endif
}

cudaError_t encore_cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* deps, size_t num_deps,
                                                       unsigned int flags) {
#if CUDART_VERSION >= 13000
  return cudaStreamUpdateCaptureDependencies(stream, deps, nullptr, num_deps, flags);
#else
  return cudaStreamUpdateCaptureDependencies(stream, deps, num_deps, flags);
#endif
}

cudaError_t encore_cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                 size_t num_deps, cudaStreamCaptureMode mode) {
#if CUDART_VERSION >= 12040
  return cudaStreamBeginCaptureToGraph(stream, graph, deps, nullptr, num_deps, mode);
#else
  (void)stream, (void)graph, (void)deps, (void)num_deps, (void)mode;
  return cudaErrorNotSupported;
#endif
}

cudaError_t encore_cuGraphNodeGetParams(cudaGraphNode_t node, CUgraphNodeParams* params) {
  // At 13.2's ABI, the first with this form of the call: a 13.0 or 13.1
  // driver is not asked.
  static const auto fn = DriverFn<CUresult (*)(CUgraphNode, CUgraphNodeParams*)>("cuGraphNodeGetParams", 13020);
  return fn ? FromDriver(fn(node, params)) : cudaErrorNotSupported;
}

namespace encore {
namespace {

// The runtime's name for each call ("encore_" marks our version-neutral
// wrappers, which are named after the runtime call they wrap).
constexpr std::string_view RuntimeName(std::string_view fn) {
  return fn.starts_with("encore_") ? fn.substr(7) : fn;
}

constexpr std::string_view kNames[] = {
#define ENCORE_X_(name, fn, args) RuntimeName(#fn),
    ENCORE_CUDA_API_LIST(ENCORE_X_)
#undef ENCORE_X_
};
constexpr std::string_view kShortNames[] = {
#define ENCORE_X_(name, fn, args) #name,
    ENCORE_CUDA_API_LIST(ENCORE_X_)
#undef ENCORE_X_
};
constexpr int kNumCalls = static_cast<int>(CudaCall::kCount);

const CudaApi kReal = {
#define ENCORE_X_(name, fn, args) static_cast<cudaError_t(*) args>(&::fn),
    ENCORE_CUDA_API_LIST(ENCORE_X_)
#undef ENCORE_X_
};

struct Plan {
  std::atomic<int> calls{0};
  std::atomic<int> failed{0};
  std::atomic<int> fail_from{0};  // 1-based call number; 0 = never
  std::atomic<int> fail_to{0};    // inclusive
  std::atomic<int> error{0};
};
std::array<Plan, kNumCalls> g_plans;
std::atomic<bool> g_leave_in_last_error{false};
// An injected error the seam's GetLastError reports next on this thread.
thread_local cudaError_t t_pending_error = cudaSuccess;

// Puts `err` in this thread's last-error slot the way CUDA would. Real calls
// run with the capture mode relaxed, so an open capture is not invalidated
// by them.
void LeaveInLastErrorSlot(cudaError_t err) {
  if (err != cudaErrorInvalidValue) {
    // Out of memory and capture errors are left for the seam's next
    // GetLastError: a real failing allocation makes the driver move device
    // memory (2 MiB back and forth on an H200), which would hide a leak
    // measurement. ReplayPathGpuTest covers a real out-of-memory.
    t_pending_error = err;
    return;
  }
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  (void)cudaMalloc(nullptr, 1);  // fails: invalid value
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
}

bool Hit(CudaCall call, cudaError_t* err) {
  Plan& p = g_plans[static_cast<int>(call)];
  int n = p.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  int from = p.fail_from.load(std::memory_order_relaxed);
  if (from != 0 && n >= from && n <= p.fail_to.load(std::memory_order_relaxed)) {
    p.failed.fetch_add(1, std::memory_order_relaxed);
    *err = static_cast<cudaError_t>(p.error.load(std::memory_order_relaxed));
    if (call != CudaCall::kGetLastError && g_leave_in_last_error.load(std::memory_order_relaxed)) {
      LeaveInLastErrorSlot(*err);
    }
    return true;
  }
  return false;
}

template <CudaCall C, auto Real>
struct Injected;
template <CudaCall C, typename... A, cudaError_t (*Real)(A...)>
struct Injected<C, Real> {
  static cudaError_t Fn(A... a) {
    cudaError_t err;
    if (Hit(C, &err)) return err;
    if constexpr (C == CudaCall::kGetLastError) {
      // The real slot is read (and cleared) too, as CUDA would.
      cudaError_t real = Real(a...);
      if (t_pending_error != cudaSuccess) return std::exchange(t_pending_error, cudaSuccess);
      return real;
    }
    return Real(a...);
  }
};

const CudaApi kInjected = {
#define ENCORE_X_(name, fn, args) &Injected<CudaCall::k##name, static_cast<cudaError_t(*) args>(&::fn)>::Fn,
    ENCORE_CUDA_API_LIST(ENCORE_X_)
#undef ENCORE_X_
};

std::atomic<bool> g_injector_alive{false};

}  // namespace

namespace internal {
std::atomic<const CudaApi*> g_cuda_api{&kReal};
}  // namespace internal

const CudaApi& RealCudaApi() { return kReal; }

Status CudaResult(cudaError_t err, CudaCall call, std::string_view context) {
  if (err == cudaSuccess) return OkStatus();
  ClearCudaError();
  return CudaStatus(err, CudaCallName(call), context);
}

Status LaunchResult(cudaError_t err, std::string_view what, std::string_view context) {
  return CudaStatus(err, what, context);
}

void ClearCudaError() { (void)cuda().GetLastError(); }

std::string_view CudaCallName(CudaCall call) {
  int i = static_cast<int>(call);
  return i >= 0 && i < kNumCalls ? kNames[i] : std::string_view("unknown");
}

std::optional<CudaCall> CudaCallFromName(std::string_view name) {
  for (int i = 0; i < kNumCalls; ++i) {
    if (kNames[i] == name || kShortNames[i] == name) return static_cast<CudaCall>(i);
  }
  return std::nullopt;
}

CudaFaultInjector::CudaFaultInjector() {
  bool was = g_injector_alive.exchange(true);
  assert(!was && "one CudaFaultInjector at a time");
  (void)was;
  ResetCounts();
  ClearFailures();
  internal::g_cuda_api.store(&kInjected);
}

CudaFaultInjector::~CudaFaultInjector() {
  internal::g_cuda_api.store(&kReal);
  ClearFailures();
  LeaveInLastError(false);
  t_pending_error = cudaSuccess;
  g_injector_alive.store(false);
}

void CudaFaultInjector::FailNth(CudaCall call, int nth, cudaError_t error, int times) {
  Plan& p = g_plans[static_cast<int>(call)];
  int base = p.calls.load();
  p.error.store(static_cast<int>(error));
  p.fail_to.store(base + nth + times - 1);
  p.fail_from.store(base + nth);
}

void CudaFaultInjector::ClearFailures() {
  for (Plan& p : g_plans) p.fail_from.store(0);
}

void CudaFaultInjector::LeaveInLastError(bool on) { g_leave_in_last_error.store(on); }

int CudaFaultInjector::Count(CudaCall call) const {
  return g_plans[static_cast<int>(call)].calls.load();
}

int CudaFaultInjector::Failed(CudaCall call) const {
  return g_plans[static_cast<int>(call)].failed.load();
}

void CudaFaultInjector::ResetCounts() {
  for (Plan& p : g_plans) {
    p.calls.store(0);
    p.failed.store(0);
  }
}

}  // namespace encore
