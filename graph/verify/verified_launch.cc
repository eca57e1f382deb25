// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/verified_launch.h"

#include <algorithm>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/capture_fence.h"

namespace encore {
namespace {

constexpr size_t kAlign = 256;
size_t Aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

Status Copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return OkStatus();
  ENCORE_CUDA_CALL(MemcpyAsync, dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
  return OkStatus();
}

}  // namespace

StatusOr<VerifiedLaunch> VerifiedLaunch::Begin(Args inputs, Args outputs, std::vector<DeviceStateRegion> regions,
                                               ConstantGuard* guard, size_t max_guard_bytes, cudaStream_t stream,
                                               VerifyScratch* scratch) {
  VerifiedLaunch v;
  if (scratch == nullptr) {
    v.own_ = std::make_unique<VerifyScratch>();
    scratch = v.own_.get();
  }
  v.scratch_ = scratch;
  if (guard != nullptr) {
    ENCORE_ASSIGN_OR_RETURN(v.guard_, guard->BeginTwice(max_guard_bytes, stream));
  }
  size_t total = 0;
  for (Args a : {inputs, outputs}) {
    for (const TensorRef& t : a) total += Aligned(t.span_bytes());
  }
  for (const DeviceStateRegion& r : regions) total += 2 * Aligned(r.bytes);
  if (scratch->bytes < total || !scratch->memory) {
    scratch->memory = DeviceMemory();  // freed before the larger one is made
    scratch->bytes = 0;
    ENCORE_ASSIGN_OR_RETURN(scratch->memory, DeviceMemory::Allocate(std::max(total, kAlign)));
    scratch->bytes = std::max(total, kAlign);
  }
  std::byte* next = scratch->memory.as<std::byte>();
  for (auto [from, to] : {std::pair{inputs, &v.eager_inputs_}, std::pair{outputs, &v.eager_outputs_}}) {
    for (const TensorRef& t : from) {
      TensorRef copy = t;
      copy.data = t.span_bytes() == 0 ? nullptr : next;
      ENCORE_RETURN_IF_ERROR(Copy(copy.data, t.data, t.span_bytes(), stream));
      next += Aligned(t.span_bytes());
      to->push_back(copy);
    }
  }
  for (DeviceStateRegion& r : regions) {
    const size_t slot = Aligned(r.bytes);
    v.slots_.push_back(Slot{std::move(r), next, next + slot});
    next += 2 * slot;
  }
  ENCORE_RETURN_IF_ERROR(v.CopyRegions(/*to_saved=*/true, &Slot::before, stream));
  return v;
}

Status VerifiedLaunch::AddRegions(const std::vector<DeviceStateRegion>& regions, cudaStream_t stream) {
  size_t total = 0;
  for (const DeviceStateRegion& r : regions) total += 2 * Aligned(r.bytes);
  if (total == 0) return OkStatus();
  ENCORE_ASSIGN_OR_RETURN(DeviceMemory m, DeviceMemory::Allocate(total));
  std::byte* next = m.as<std::byte>();
  for (const DeviceStateRegion& r : regions) {
    const size_t slot = Aligned(r.bytes);
    Slot s{r, next, next + slot};
    next += 2 * slot;
    ENCORE_RETURN_IF_ERROR(Copy(s.before, r.data, r.bytes, stream));
    slots_.push_back(std::move(s));
  }
  added_.push_back(std::move(m));
  return OkStatus();
}

Status VerifiedLaunch::CopyRegions(bool to_saved, std::byte* Slot::*saved, cudaStream_t stream) {
  for (Slot& s : slots_) {
    void* dst = to_saved ? static_cast<void*>(s.*saved) : s.region.data;
    const void* src = to_saved ? static_cast<const void*>(s.region.data) : s.*saved;
    ENCORE_RETURN_IF_ERROR(Copy(dst, src, s.region.bytes, stream));
  }
  return OkStatus();
}

StatusOr<std::string> VerifiedLaunch::Rewind(cudaStream_t stream) {
  if (guard_ != nullptr) {
    // Before anything is put back: a write outside what was saved means
    // no second run.
    ENCORE_ASSIGN_OR_RETURN(std::string why, guard_->RewindFirst(stream));
    if (!why.empty()) {
      guard_.reset();  // the first run's state stands, as it is
      return why;
    }
    rewound_ = true;
  }
  ENCORE_RETURN_IF_ERROR(CopyRegions(/*to_saved=*/true, &Slot::graph, stream));
  graph_saved_ = true;
  ENCORE_RETURN_IF_ERROR(CopyRegions(/*to_saved=*/false, &Slot::before, stream));
  // The eager body may start work on streams it never joined to this one.
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  return std::string();
}

StatusOr<std::string> VerifiedLaunch::Compare(Args outputs, double tolerance, cudaStream_t stream, bool whole_device,
                                              std::chrono::milliseconds patience) {
  device_synced_ = false;
  if (whole_device) {
    ENCORE_ASSIGN_OR_RETURN(device_synced_, SynchronizeDeviceBetweenCaptures(patience));
    // The comparisons follow the second run on this stream in any case.
    if (!device_synced_) ENCORE_CUDA_CALL(StreamSynchronize, stream);
  }
  const int slots = static_cast<int>(std::max<size_t>(1, outputs.size() + slots_.size()));
  ENCORE_ASSIGN_OR_RETURN(DeviceDiff * diff, Diff(slots, stream));
  for (size_t i = 0; i < outputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(diff->Enqueue(static_cast<int>(i), outputs[i], outputs[i].data, eager_outputs_[i].data,
                                          tolerance, stream));
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    ENCORE_RETURN_IF_ERROR(diff->EnqueueBytes(static_cast<int>(outputs.size() + i), s.graph, s.region.data,
                                               s.region.bytes, stream));
  }
  if (guard_ != nullptr) ENCORE_RETURN_IF_ERROR(guard_->QueueSecond(/*compare_bytes=*/tolerance == 0, stream));
  // One wait for every comparison queued above.
  ENCORE_ASSIGN_OR_RETURN(std::vector<std::string> found,
                          diff->ReadFirst(static_cast<int>(outputs.size() + slots_.size()), stream));
  for (size_t i = 0; i < found.size(); ++i) {
    if (found[i].empty()) continue;
    if (i < outputs.size()) return "output " + std::to_string(i) + " " + found[i];
    return slots_[i - outputs.size()].region.what + " " + found[i];
  }
  if (guard_ != nullptr) return guard_->ReadSecond(stream);
  return std::string();
}

StatusOr<DeviceDiff*> VerifiedLaunch::Diff(int slots, cudaStream_t stream) {
  DeviceDiff& diff = scratch_->diff;
  if (diff.slots() < slots) {
    ENCORE_ASSIGN_OR_RETURN(diff, DeviceDiff::Create(slots, stream));
  }
  return &diff;
}

StatusOr<std::string> VerifiedLaunch::FirstWritten(Args buffers, std::span<const std::string> names, cudaStream_t stream) {
  if (buffers.empty()) return std::string();
  ENCORE_ASSIGN_OR_RETURN(DeviceDiff * diff, Diff(static_cast<int>(buffers.size()), stream));
  for (size_t i = 0; i < buffers.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(
        diff->EnqueueFill(static_cast<int>(i), buffers[i].data, kFill, buffers[i].span_bytes(), stream));
  }
  ENCORE_ASSIGN_OR_RETURN(std::vector<std::string> found, diff->ReadFirst(static_cast<int>(buffers.size()), stream));
  for (size_t i = 0; i < found.size(); ++i) {
    if (!found[i].empty()) return names[i] + " (" + found[i] + ")";
  }
  return std::string();
}

Status VerifiedLaunch::KeepGraphResult(cudaStream_t stream) {
  if (rewound_) {
    rewound_ = false;
    ENCORE_RETURN_IF_ERROR(guard_->KeepFirst(stream));
  }
  // Before Rewind saved the graph's state the regions still hold it, and
  // the saved copies do not: copying them back would put garbage there.
  if (!graph_saved_) return OkStatus();
  return CopyRegions(/*to_saved=*/false, &Slot::graph, stream);
}

Status VerifiedLaunch::KeepEagerResult(Args outputs, cudaStream_t stream) {
  if (rewound_) {
    rewound_ = false;
    guard_->KeepSecond();
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(Copy(outputs[i].data, eager_outputs_[i].data, outputs[i].span_bytes(), stream));
  }
  return OkStatus();
}

}  // namespace encore
