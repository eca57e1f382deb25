// SPDX-License-Identifier: Apache-2.0
#include "encore/interop/torch/scope.h"

#include <ATen/cuda/MemPool.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "encore/interop/torch/internal/torch_status.h"  // private to interop/torch/

namespace encore::torch {

namespace alloc = c10::cuda::CUDACachingAllocator;

struct Scope::State {
  cudaStream_t stream = nullptr;
  bool capturing = false;
  int device = 0;
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard;
  bool routed = false;
  c10::MempoolId_t pool{0, 0};

  ~State() {
    // Routing ends before the stream is restored, and never throws out of a
    // destructor (the allocator checks that the pool is being recorded to).
    if (routed) {
      try {
        alloc::endAllocateToPool(static_cast<c10::DeviceIndex>(device), pool);
      } catch (...) {
      }
    }
    stream_guard.reset();
  }
};

namespace {

bool RoutingOffByEnvironment() {
  const char* v = std::getenv("ENCORE_TORCH_ROUTE_ALLOCATOR");
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "0" || s == "off" || s == "false";
}

// The pool's share of a graph: dropping it tells PyTorch's allocator that
// the graph is gone, so the pool's memory goes back to CUDA once all of its
// blocks are free (at the next emptyCache, or when an allocation needs it).
class PoolLease {
 public:
  PoolLease(int device, c10::MempoolId_t pool) : device_(device), pool_(pool) {}
  PoolLease(const PoolLease&) = delete;
  PoolLease& operator=(const PoolLease&) = delete;
  ~PoolLease() {
    try {
      alloc::releasePool(static_cast<c10::DeviceIndex>(device_), pool_);
    } catch (...) {
      // Only at process exit, after PyTorch's allocator is gone.
    }
  }

 private:
  const int device_;
  const c10::MempoolId_t pool_;
};

// Accepts allocations on streams of one capture: the capture stream and any
// stream joined to it (a side stream forked with an event shares its id).
bool OnCapture(cudaStream_t stream, unsigned long long capture_id) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamGetCaptureInfo(stream, &st, &id) != cudaSuccess) {
    (void)cudaGetLastError();  // the legacy stream during another capture
    return false;
  }
  return st == cudaStreamCaptureStatusActive && id == capture_id;
}

Status RequireNativeAllocator() {
  const std::string name = alloc::get()->name();
  if (name == "native") return OkStatus();
  return CaptureRefusal("PyTorch's CUDA allocator is '" + name +
                        "' (PYTORCH_CUDA_ALLOC_CONF backend): only its native caching allocator can be routed to "
                        "a graph's private pool, so the method runs eagerly");
}

// Routes the allocator to a new private pool for this capture and ties the
// pool to the graph.
Status RouteToPool(Call& call, int device, cudaStream_t stream, c10::MempoolId_t* pool,
                   bool* routed) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaError_t err = cudaStreamGetCaptureInfo(stream, &st, &id); err != cudaSuccess) {
    (void)cudaGetLastError();
    return InternalError(std::string("torch::Scope: cudaStreamGetCaptureInfo failed: ") + cudaGetErrorName(err));
  }
  if (st != cudaStreamCaptureStatusActive) {
    return CaptureRefusal("torch::Scope: the call's stream is not capturing (the capture was invalidated)");
  }
  *pool = at::cuda::MemPool::graph_pool_handle(/*is_user_created=*/false);
  const auto dev = static_cast<c10::DeviceIndex>(device);
  alloc::beginAllocateToPool(dev, *pool, [id](cudaStream_t s) { return OnCapture(s, id); });
  *routed = true;
  auto lease = std::make_shared<PoolLease>(device, *pool);
  Status kept = call.KeepWithGraph(lease);
  if (!kept.ok()) {
    alloc::endAllocateToPool(dev, *pool);  // before the lease goes, so the pool is released unrecorded to
    *routed = false;
  }
  return kept;
}

}  // namespace

Scope::Scope(std::unique_ptr<State> state) : state_(std::move(state)) {}
Scope::Scope(Scope&& other) noexcept = default;
Scope& Scope::operator=(Scope&& other) noexcept = default;
Scope::~Scope() = default;

bool Scope::routed() const { return state_ != nullptr && state_->routed; }
int Scope::device() const { return state_ != nullptr ? state_->device : -1; }

StatusOr<Scope> Scope::Enter(Call& call) { return Enter(call, ScopeOptions{}); }

StatusOr<Scope> Scope::Enter(Call& call, const ScopeOptions& options) {
  auto state = std::make_unique<State>();
  state->stream = call.stream();
  state->capturing = call.kind() == CallKind::kCapture;
  if (cudaError_t err = cudaGetDevice(&state->device); err != cudaSuccess) {
    (void)cudaGetLastError();
    return InternalError(std::string("torch::Scope: cudaGetDevice failed: ") + cudaGetErrorName(err));
  }
  Scope scope(std::move(state));
  State& s = *scope.state_;
  try {
    if (s.capturing) ENCORE_RETURN_IF_ERROR(RequireNativeAllocator());
    s.stream_guard.emplace(
        c10::cuda::getStreamFromExternal(s.stream, static_cast<c10::DeviceIndex>(s.device)));
    if (s.capturing && options.route_allocator && !RoutingOffByEnvironment()) {
      ENCORE_RETURN_IF_ERROR(RouteToPool(call, s.device, s.stream, &s.pool, &s.routed));
    }
  } catch (...) {
    // `scope` restores what was set when it goes.
    return internal::StatusFromException(std::current_exception(), s.capturing, s.stream, "torch::Scope::Enter");
  }
  return scope;
}

Status Scope::FromException(std::exception_ptr e) const {
  const bool capturing = state_ != nullptr && state_->capturing;
  return internal::StatusFromException(e, capturing, state_ != nullptr ? state_->stream : nullptr, "torch");
}

}  // namespace encore::torch
