// SPDX-License-Identifier: Apache-2.0
#include "graph/verifier.h"  // private to graph/

#include <chrono>
#include <cstring>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/capture_fence.h"
#include "graph/output_compare.h"

namespace encore {
namespace {

constexpr size_t kAlign = 256;
size_t Aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

Status Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (bytes == 0) return OkStatus();
  ENCORE_CUDA_CALL(MemcpyAsync, dst, src, bytes, kind, stream);
  return OkStatus();
}

Status ToHost(std::vector<std::byte>& out, const void* src, size_t bytes, cudaStream_t stream) {
  out.resize(bytes);
  return Copy(out.data(), src, bytes, cudaMemcpyDeviceToHost, stream);
}

}  // namespace

StatusOr<VerifiedLaunch> VerifiedLaunch::Begin(Args inputs, Args outputs, std::vector<DeviceStateRegion> regions,
                                               cudaStream_t stream) {
  size_t total = 0;
  for (Args a : {inputs, outputs}) {
    for (const TensorRef& t : a) total += Aligned(t.span_bytes());
  }
  for (const DeviceStateRegion& r : regions) total += 2 * Aligned(r.bytes);
  VerifiedLaunch v;
  ENCORE_ASSIGN_OR_RETURN(v.memory_, DeviceMemory::Allocate(total == 0 ? kAlign : total));
  std::byte* next = v.memory_.as<std::byte>();
  for (auto [from, to] : {std::pair{inputs, &v.eager_inputs_}, std::pair{outputs, &v.eager_outputs_}}) {
    for (const TensorRef& t : from) {
      TensorRef copy = t;
      copy.data = t.span_bytes() == 0 ? nullptr : next;
      ENCORE_RETURN_IF_ERROR(Copy(copy.data, t.data, t.span_bytes(), cudaMemcpyDeviceToDevice, stream));
      next += Aligned(t.span_bytes());
      to->push_back(copy);
    }
  }
  for (DeviceStateRegion& r : regions) {
    const size_t slot = Aligned(r.bytes);
    Slot s{std::move(r), next, next + slot};
    next += 2 * slot;
    v.slots_.push_back(std::move(s));
  }
  ENCORE_RETURN_IF_ERROR(v.CopyRegions(/*to_saved=*/true, &Slot::before, stream));
  return v;
}

Status VerifiedLaunch::CopyRegions(bool to_saved, std::byte* Slot::*saved, cudaStream_t stream) {
  for (Slot& s : slots_) {
    void* dst = to_saved ? static_cast<void*>(s.*saved) : s.region.data;
    const void* src = to_saved ? static_cast<const void*>(s.region.data) : s.*saved;
    ENCORE_RETURN_IF_ERROR(Copy(dst, src, s.region.bytes, cudaMemcpyDeviceToDevice, stream));
  }
  return OkStatus();
}

Status VerifiedLaunch::Rewind(cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CopyRegions(/*to_saved=*/true, &Slot::graph, stream));
  graph_saved_ = true;
  ENCORE_RETURN_IF_ERROR(CopyRegions(/*to_saved=*/false, &Slot::before, stream));
  // The eager body may start work on streams it never joined to this one.
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  return OkStatus();
}

StatusOr<std::string> VerifiedLaunch::Compare(Args outputs, double tolerance, cudaStream_t stream,
                                              bool whole_device, std::chrono::milliseconds patience) {
  device_synced_ = false;
  if (whole_device) {
    // Not while a capture is in flight (the sync would invalidate it): wait
    // for the captures in flight, within reason.
    ENCORE_ASSIGN_OR_RETURN(device_synced_, SynchronizeDeviceBetweenCaptures(patience));
  }
  if (!device_synced_) ENCORE_CUDA_CALL(StreamSynchronize, stream);
  std::vector<std::byte> g, e;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const size_t bytes = outputs[i].span_bytes();
    if (bytes == 0) continue;
    ENCORE_RETURN_IF_ERROR(ToHost(g, outputs[i].data, bytes, stream));
    ENCORE_RETURN_IF_ERROR(ToHost(e, eager_outputs_[i].data, bytes, stream));
    ENCORE_CUDA_CALL(StreamSynchronize, stream);
    std::string diff = FirstDifference(outputs[i], g.data(), e.data(), tolerance);
    if (!diff.empty()) return "output " + std::to_string(i) + " " + diff;
  }
  for (const Slot& s : slots_) {
    if (tolerance != 0 && s.region.what.rfind("constant", 0) == 0) continue;
    ENCORE_RETURN_IF_ERROR(ToHost(g, s.graph, s.region.bytes, stream));
    ENCORE_RETURN_IF_ERROR(ToHost(e, s.region.data, s.region.bytes, stream));
    ENCORE_CUDA_CALL(StreamSynchronize, stream);
    for (size_t b = 0; b < s.region.bytes; ++b) {
      if (g[b] == e[b]) continue;
      return s.region.what + " byte " + std::to_string(b) + ": graph " + std::to_string(static_cast<int>(g[b])) +
             ", eager " + std::to_string(static_cast<int>(e[b]));
    }
  }
  return std::string();
}

Status VerifiedLaunch::KeepGraphResult(cudaStream_t stream) {
  // Before Rewind saved the graph's state the regions still hold it, and
  // the saved copies do not: copying them back would put garbage there.
  if (!graph_saved_) return OkStatus();
  return CopyRegions(/*to_saved=*/false, &Slot::graph, stream);
}

Status VerifiedLaunch::KeepEagerResult(Args outputs, cudaStream_t stream) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    ENCORE_RETURN_IF_ERROR(Copy(outputs[i].data, eager_outputs_[i].data, outputs[i].span_bytes(),
                                cudaMemcpyDeviceToDevice, stream));
  }
  return OkStatus();
}

}  // namespace encore
