// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/device_diff.h"

#include <cmath>
#include <cstring>
#include <string>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/verify/internal/output_compare.h"
#include "encore/graph/verify/internal/device_io.h"

namespace encore {

std::string FormatByteDifference(int64_t offset, uint8_t graph, uint8_t eager) {
  return "byte " + std::to_string(offset) + ": graph " + std::to_string(static_cast<int>(graph)) + ", eager " +
         std::to_string(static_cast<int>(eager));
}

StatusOr<DeviceDiff> DeviceDiff::Create(int slots, cudaStream_t stream) {
  if (slots < 1) return InvalidArgumentError("DeviceDiff: slots is " + std::to_string(slots) + ", at least 1");
  ENCORE_RETURN_IF_ERROR(verify_io::RefuseInCapture(stream, "DeviceDiff::Create"));
  DeviceDiff d;
  const size_t bytes = static_cast<size_t>(slots) * sizeof(diff::DeviceResult);
  ENCORE_ASSIGN_OR_RETURN(d.memory_, DeviceMemory::Allocate(bytes));
  d.results_ = d.memory_.as<diff::DeviceResult>();
  // The kernel relies on a zero ticket and working field.
  ENCORE_CUDA_CALL(MemsetAsync, d.results_, 0, bytes, stream);
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  d.kinds_.assign(slots, Kind::kNone);
  d.dtypes_.assign(slots, DType::kUInt8);
  return d;
}

Status DeviceDiff::CheckSlot(int slot) const {
  if (slot < 0 || slot >= slots()) {
    return InvalidArgumentError("DeviceDiff: slot " + std::to_string(slot) + " is outside [0, " +
                                std::to_string(slots()) + ")");
  }
  return OkStatus();
}

Status DeviceDiff::Launch(int slot, const diff::Params& params, cudaStream_t stream) {
  const cudaError_t err = diff::LaunchFirstDifference(params, stream);
  if (err != cudaSuccess) {
    kinds_[slot] = Kind::kNone;
    return CudaStatus(err, "device diff kernel launch");
  }
  return OkStatus();
}

Status DeviceDiff::Enqueue(int slot, const TensorRef& layout, const void* graph, const void* eager, double tolerance,
                           cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSlot(slot));
  if (!(tolerance >= 0) || !std::isfinite(tolerance)) {
    return InvalidArgumentError("DeviceDiff: tolerance " + std::to_string(tolerance) + " is not a finite number >= 0");
  }
  TensorRef t = layout;
  t.data = const_cast<void*>(graph);
  ENCORE_RETURN_IF_ERROR(ValidateTensorRef(t, "DeviceDiff graph tensor"));
  t.data = const_cast<void*>(eager);
  ENCORE_RETURN_IF_ERROR(ValidateTensorRef(t, "DeviceDiff eager tensor"));
  dtypes_[slot] = layout.dtype;
  kinds_[slot] = Kind::kEmpty;
  const int64_t n = layout.numel();
  if (n == 0) return OkStatus();
  diff::Params p{};
  p.graph = static_cast<const unsigned char*>(graph);
  p.eager = static_cast<const unsigned char*>(eager);
  p.numel = n;
  p.rank = layout.shape.size();
  const Strides strides = layout.effective_strides();
  for (int d = 0; d < p.rank; ++d) {
    p.shape[d] = layout.shape[d];
    p.strides[d] = strides[d];
  }
  p.elem_bytes = static_cast<int>(DTypeSize(layout.dtype));
  p.dtype = static_cast<int>(layout.dtype);
  p.contiguous = layout.is_contiguous() ? 1 : 0;
  const uintptr_t bases = reinterpret_cast<uintptr_t>(graph) | reinterpret_cast<uintptr_t>(eager);
  p.vector16 = p.contiguous && tolerance == 0 && bases % 16 == 0 ? 1 : 0;
  p.elem_aligned = bases % p.elem_bytes == 0 ? 1 : 0;
  p.tolerance = tolerance;
  p.fill = -1;
  p.result = results_ + slot;
  kinds_[slot] = Kind::kElements;
  return Launch(slot, p, stream);
}

Status DeviceDiff::EnqueueBytes(int slot, const void* graph, const void* eager, size_t bytes, cudaStream_t stream) {
  if (bytes != 0 && eager == nullptr) {
    return InvalidArgumentError("DeviceDiff: " + std::to_string(bytes) + " bytes at a null address");
  }
  return EnqueueRaw(slot, graph, eager, -1, bytes, stream);
}

Status DeviceDiff::EnqueueFill(int slot, const void* graph, unsigned char fill, size_t bytes, cudaStream_t stream) {
  return EnqueueRaw(slot, graph, nullptr, fill, bytes, stream);
}

Status DeviceDiff::EnqueueRaw(int slot, const void* graph, const void* eager, int fill, size_t bytes,
                              cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSlot(slot));
  if (bytes > static_cast<size_t>(INT64_MAX)) return InvalidArgumentError("DeviceDiff: byte count beyond INT64_MAX");
  if (bytes != 0 && graph == nullptr) {
    return InvalidArgumentError("DeviceDiff: " + std::to_string(bytes) + " bytes at a null address");
  }
  dtypes_[slot] = DType::kUInt8;
  kinds_[slot] = Kind::kEmpty;
  if (bytes == 0) return OkStatus();
  diff::Params p{};
  p.graph = static_cast<const unsigned char*>(graph);
  p.eager = static_cast<const unsigned char*>(eager);
  p.numel = static_cast<int64_t>(bytes);
  p.rank = 1;
  p.shape[0] = p.numel;
  p.strides[0] = 1;
  p.elem_bytes = 1;
  p.dtype = static_cast<int>(DType::kUInt8);
  p.contiguous = 1;
  p.vector16 = (reinterpret_cast<uintptr_t>(graph) | reinterpret_cast<uintptr_t>(eager)) % 16 == 0 ? 1 : 0;
  p.elem_aligned = 1;
  p.tolerance = 0;
  p.fill = fill;
  p.result = results_ + slot;
  kinds_[slot] = Kind::kBytes;
  return Launch(slot, p, stream);
}

ElementDifference DeviceDiff::Decode(int slot, const diff::DeviceResult& r) const {
  ElementDifference out;
  out.dtype = dtypes_[slot];
  if (kinds_[slot] == Kind::kEmpty || r.first_inv == 0) return out;
  out.index = static_cast<int64_t>(~r.first_inv);
  std::memcpy(out.graph.data(), r.graph, sizeof r.graph);
  std::memcpy(out.eager.data(), r.eager, sizeof r.eager);
  return out;
}

std::string DeviceDiff::Format(int slot, const ElementDifference& d) const {
  if (!d.differs()) return std::string();
  if (kinds_[slot] == Kind::kBytes) {
    return FormatByteDifference(d.index, static_cast<uint8_t>(d.graph[0]), static_cast<uint8_t>(d.eager[0]));
  }
  return FormatElementDifference(d.dtype, d.index, d.graph.data(), d.eager.data());
}

StatusOr<ElementDifference> DeviceDiff::ReadDifference(int slot, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSlot(slot));
  if (kinds_[slot] == Kind::kNone) {
    return FailedPreconditionError("DeviceDiff: slot " + std::to_string(slot) + " holds no comparison");
  }
  diff::DeviceResult r{};
  if (kinds_[slot] != Kind::kEmpty) {
    ENCORE_RETURN_IF_ERROR(verify_io::ReadBack(&r, results_ + slot, sizeof r, stream, "DeviceDiff::Read"));
  }
  return Decode(slot, r);
}

StatusOr<std::string> DeviceDiff::Read(int slot, cudaStream_t stream) {
  ENCORE_ASSIGN_OR_RETURN(ElementDifference d, ReadDifference(slot, stream));
  return Format(slot, d);
}

StatusOr<std::vector<std::string>> DeviceDiff::ReadFirst(int count, cudaStream_t stream) {
  if (count < 0 || count > slots()) {
    return InvalidArgumentError("DeviceDiff: " + std::to_string(count) + " slots asked of " + std::to_string(slots()));
  }
  for (int i = 0; i < count; ++i) {
    if (kinds_[i] == Kind::kNone) {
      return FailedPreconditionError("DeviceDiff: slot " + std::to_string(i) + " holds no comparison");
    }
  }
  // One copy and one wait for every slot, however many the call compared.
  std::vector<diff::DeviceResult> r(static_cast<size_t>(count));
  ENCORE_RETURN_IF_ERROR(
      verify_io::ReadBack(r.data(), results_, r.size() * sizeof(diff::DeviceResult), stream, "DeviceDiff::ReadFirst"));
  std::vector<std::string> out(r.size());
  for (int i = 0; i < count; ++i) out[i] = Format(i, Decode(i, r[i]));
  return out;
}

StatusOr<std::string> DeviceDiff::FirstDifference(const TensorRef& layout, const void* graph, const void* eager,
                                                  double tolerance, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(Enqueue(0, layout, graph, eager, tolerance, stream));
  return Read(0, stream);
}

}  // namespace encore
