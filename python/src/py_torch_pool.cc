// SPDX-License-Identifier: Apache-2.0
#include "py_torch_pool.h"

#include <nanobind/stl/shared_ptr.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/scoped_capture_mode.h"
#include "encore/core/internal/device_guard.h"
#include "py_status.h"

namespace nb = nanobind;

namespace encore::python {
namespace {

// Every segment PyTorch holds, and the memory it came from.
struct Registry {
  std::mutex mu;
  std::unordered_map<void*, std::shared_ptr<TorchPoolMemory>> segments;
};

Registry& Segments() {
  static auto* r = new Registry;  // never destroyed: PyTorch may free a segment at exit
  return *r;
}

// The memory this thread's capture routes PyTorch's segments to now.
thread_local std::shared_ptr<TorchPoolMemory> t_route;

// Where a segment PyTorch asks for with no route goes (none is expected:
// only encore's captures route to its pools, and they set the route first):
// memory of that device that no sleep takes, so no capture fails for it.
std::shared_ptr<TorchPoolMemory> Unrouted(int device) {
  static std::mutex mu;
  static auto* by_device = new std::unordered_map<int, std::shared_ptr<TorchPoolMemory>>;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<TorchPoolMemory>& m = (*by_device)[device];
  if (m == nullptr) {
    m = std::make_shared<TorchPoolMemory>(device);
    m->set_orphaned();
  }
  return m;
}

}  // namespace

StatusOr<void*> TorchPoolMemory::Allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceGuard device(device_);
  // PyTorch asks inside the capture; allocating is not allowed there in
  // thread-local mode, so the mode is relaxed for this call, as PyTorch's
  // own cudaMalloc of a segment does.
  StatusOr<void*> p = [&] {
    ScopedCaptureMode relaxed(cudaStreamCaptureModeRelaxed);
    return slabs_.Allocate(bytes);
  }();
  if (p.ok()) {
    bytes_ += bytes;
    ++segments_;
  }
  return p;
}

Status TorchPoolMemory::Free(void* base, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceGuard device(device_);
  Status s = [&] {
    ScopedCaptureMode relaxed(cudaStreamCaptureModeRelaxed);
    return slabs_.Free(base);
  }();
  bytes_ -= std::min(bytes_, bytes);
  if (segments_ > 0) --segments_;
  return s;
}

StatusOr<size_t> TorchPoolMemory::Sleep() {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceGuard device(device_);
  return slabs_.Sleep();
}

Status TorchPoolMemory::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceGuard device(device_);
  return slabs_.Wake();
}

bool TorchPoolMemory::asleep() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slabs_.asleep();
}

size_t TorchPoolMemory::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t TorchPoolMemory::segments() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segments_;
}

std::shared_ptr<TorchPoolMemory> TorchPools::Make(int device) {
  auto m = std::make_shared<TorchPoolMemory>(device);
  std::lock_guard<std::mutex> lock(list_mu_);
  std::erase_if(pools_, [](const std::weak_ptr<TorchPoolMemory>& w) { return w.expired(); });
  pools_.push_back(m);
  return m;
}

std::vector<std::shared_ptr<TorchPoolMemory>> TorchPools::Live() {
  std::lock_guard<std::mutex> lock(list_mu_);
  std::vector<std::shared_ptr<TorchPoolMemory>> live;
  for (const auto& w : pools_) {
    if (auto m = w.lock(); m != nullptr && !m->orphaned()) live.push_back(std::move(m));
  }
  return live;
}

StatusOr<int64_t> TorchPools::Sleep() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t bytes = 0;
  attention_.store(true, std::memory_order_release);
  asleep_.store(true, std::memory_order_release);
  for (const auto& m : Live()) {
    StatusOr<size_t> given = m->Sleep();
    if (!given.ok()) {
      for (const auto& w : Live()) {
        if (w->asleep() && !w->Wake().ok()) w->set_lost();
      }
      asleep_.store(false, std::memory_order_release);
      return given.status();
    }
    bytes += static_cast<int64_t>(*given);
  }
  return bytes;
}

Status TorchPools::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  Status first;
  for (const auto& m : Live()) {
    if (!m->asleep()) continue;
    Status s = m->Wake();
    if (!s.ok()) {
      m->set_lost();
      if (first.ok()) first = s;
    }
  }
  asleep_.store(false, std::memory_order_release);
  return first;
}

void TorchPools::Settle() {
  std::lock_guard<std::mutex> lock(mu_);
  bool attention = asleep_.load(std::memory_order_acquire);
  for (const auto& m : Live()) attention = attention || m->lost();
  attention_.store(attention, std::memory_order_release);
}

PyTorchPool::~PyTorchPool() {
  // Python lets go (the method released or gone): blocks PyTorch keeps in
  // these segments must lie in mapped memory from now on.
  memory_->set_orphaned();
  if (memory_->asleep() && !memory_->Wake().ok()) memory_->set_lost();
}

void PyTorchPool::route() { t_route = memory_; }

void PyTorchPool::unroute() {
  if (t_route == memory_) t_route.reset();
}

void BindTorchPool(nb::module_& m) {
  nb::class_<PyTorchPool>(m, "TorchPool",
                          "The device memory behind a Python method's capture pool on one device "
                          "(python/src/py_torch_pool.h)")
      .def("route", &PyTorchPool::route, "This thread's capture segments come from this memory until unroute")
      .def("unroute", &PyTorchPool::unroute)
      .def_prop_ro("bytes", [](const PyTorchPool& p) { return p.memory().bytes(); })
      .def_prop_ro("segments", [](const PyTorchPool& p) { return p.memory().segments(); })
      .def_prop_ro("asleep", [](const PyTorchPool& p) { return p.memory().asleep(); })
      .def_prop_ro("lost", [](const PyTorchPool& p) { return p.memory().lost(); })
      .def_prop_ro("device", [](const PyTorchPool& p) { return p.memory().device(); });
  m.attr("TORCH_POOL_MALLOC") = "encore_torch_pool_malloc";
  m.attr("TORCH_POOL_FREE") = "encore_torch_pool_free";
}

}  // namespace encore::python

using encore::python::Segments;
using encore::python::t_route;
using encore::python::Unrouted;

// PyTorch calls these from C++ with its allocator's lock held: nothing
// may throw out of them.
extern "C" void* encore_torch_pool_malloc(ssize_t size, int device, void* /*stream*/) noexcept {
  try {
    if (size <= 0) return nullptr;
    std::shared_ptr<encore::python::TorchPoolMemory> m = t_route;
    if (m == nullptr || m->device() != device) m = Unrouted(device);
    encore::StatusOr<void*> p = m->Allocate(static_cast<size_t>(size));
    if (!p.ok()) return nullptr;
    encore::python::Registry& r = Segments();
    std::lock_guard<std::mutex> lock(r.mu);
    r.segments.emplace(*p, std::move(m));
    return *p;
  } catch (...) {
    return nullptr;
  }
}

extern "C" void encore_torch_pool_free(void* ptr, ssize_t size, int /*device*/, void* /*stream*/) noexcept {
  try {
    std::shared_ptr<encore::python::TorchPoolMemory> m;
    {
      encore::python::Registry& r = Segments();
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.segments.find(ptr);
      if (it == r.segments.end()) return;
      m = std::move(it->second);
      r.segments.erase(it);
    }
    (void)m->Free(ptr, size > 0 ? static_cast<size_t>(size) : 0);
  } catch (...) {
  }
}
