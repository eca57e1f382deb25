// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/retired_owners.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/scoped_capture_mode.h"
#include "encore/core/internal/capture_fence.h"
#include "encore/core/internal/device_guard.h"

namespace encore {
namespace {

// Never destroyed: owners may be kept until the process ends, past static
// destruction, when CUDA may be gone.
std::mutex& KeptMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::vector<std::unique_ptr<Retired>>& KeptList() {
  static auto* kept = new std::vector<std::unique_ptr<Retired>>();
  return *kept;
}

// Whether `stream` captures; for the legacy stream, whether a blocking
// stream of the device does (cudaErrorStreamCaptureImplicit).
bool Capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t err = cuda().StreamIsCapturing(stream, &status);
  if (err == cudaSuccess) return status != cudaStreamCaptureStatusNone;
  ClearCudaError();
  return err == cudaErrorStreamCaptureImplicit;
}

void Destroy(std::unique_ptr<Retired> owner) {
  DeviceGuard device(owner->device());
  // CUDA then refuses none of this thread's calls for another capture's
  // sake (Note [Owners destroyed inside a capture]).
  ScopedCaptureMode relaxed(cudaStreamCaptureModeRelaxed);
  if (relaxed.error() != cudaSuccess) ClearCudaError();
  owner.reset();
}

}  // namespace

std::string_view CaptureInSight(cudaStream_t stream) {
  if (EncoreCaptureInFlight()) return "an encore capture is in flight";
  if (stream != nullptr && Capturing(stream)) return "the call's stream is capturing";
  if (Capturing(cudaStreamLegacy)) return "a blocking stream of the device is capturing";
  if (Capturing(cudaStreamPerThread)) return "this thread's per-thread default stream is capturing";
  return {};
}

std::string_view RetiredOwners::Retire(std::unique_ptr<Retired> owner) {
  if (!owner) return {};
  std::string_view why;
  {
    DeviceGuard device(owner->device());
    why = CaptureInSight();
  }
  if (why.empty()) {
    Destroy(std::move(owner));
    return {};
  }
  std::lock_guard<std::mutex> lock(KeptMutex());
  KeptList().push_back(std::move(owner));
  kept_.fetch_add(1, std::memory_order_relaxed);
  return why;
}

void RetiredOwners::DrainKept(cudaStream_t stream) {
  int current = -1;
  if (cuda().GetDevice(&current) != cudaSuccess) ClearCudaError();
  std::vector<std::unique_ptr<Retired>> owners;
  {
    std::lock_guard<std::mutex> lock(KeptMutex());
    owners.swap(KeptList());
  }
  std::vector<std::pair<int, bool>> sight;  // per device seen: a capture in sight there
  std::vector<std::unique_ptr<Retired>> still;
  for (std::unique_ptr<Retired>& owner : owners) {
    const int d = owner->device();
    auto seen = std::find_if(sight.begin(), sight.end(), [d](const auto& s) { return s.first == d; });
    if (seen == sight.end()) {
      DeviceGuard device(d);
      sight.emplace_back(d, !CaptureInSight(d == current ? stream : nullptr).empty());
      seen = sight.end() - 1;
    }
    if (seen->second) {
      still.push_back(std::move(owner));
      continue;
    }
    Destroy(std::move(owner));
    kept_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (still.empty()) return;
  std::lock_guard<std::mutex> lock(KeptMutex());
  for (std::unique_ptr<Retired>& owner : still) KeptList().push_back(std::move(owner));
}

}  // namespace encore
