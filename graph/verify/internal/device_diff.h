// SPDX-License-Identifier: Apache-2.0
// DeviceDiff: FirstDifference (graph/verify/internal/output_compare.h) on the device. One
// kernel finds the first differing element of two buffers laid out as one
// TensorRef describes, with the same rule (row-major order of the shape,
// strides followed, bytes between elements ignored; bitwise at tolerance 0,
// else |g - e| <= tolerance * max(1, |e|), NaN equal to NaN, an infinity
// only to itself); the read brings back that index and the two elements (a
// few dozen bytes) and formats the same text FirstDifference returns. Host
// and device memory O(slots), never proportional to a tensor.
//
// Each slot holds one comparison: Enqueue several (one per output) and
// read them after one wait. Enqueue is a kernel launch only (capturable);
// Read waits for the stream. Calls on one object must be ordered.
#ifndef ENCORE_GRAPH_VERIFY_INTERNAL_DEVICE_DIFF_H_
#define ENCORE_GRAPH_VERIFY_INTERNAL_DEVICE_DIFF_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "encore/core/internal/device_memory.h"
#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/verify/internal/diff_kernels.h"

namespace encore {

struct ElementDifference {
  int64_t index = -1;  // row-major element (byte, for bytes); -1: none
  DType dtype = DType::kUInt8;
  std::array<std::byte, 8> graph{};  // the element's bytes (dtype's size used)
  std::array<std::byte, 8> eager{};
  bool differs() const { return index >= 0; }
};

// "byte 8: graph 1, eager 2", as FormatByteDifference (graph/verify/device_diff.cc) words a region's byte.
std::string FormatByteDifference(int64_t offset, uint8_t graph, uint8_t eager);

class DeviceDiff {
 public:
  DeviceDiff() = default;

  // Allocates `slots` small results (not while `stream` is capturing),
  // zeroes them on `stream` and waits for it.
  [[nodiscard]] static StatusOr<DeviceDiff> Create(int slots, cudaStream_t stream);

  int slots() const { return static_cast<int>(kinds_.size()); }

  // Compares `graph` with `eager`, both laid out as `layout` (its data
  // pointer is ignored). InvalidArgument for a layout ValidateTensorRef
  // rejects, a null pointer with elements, or a tolerance that is negative
  // or not finite. An empty layout launches nothing and reads as equal.
  [[nodiscard]] Status Enqueue(int slot, const TensorRef& layout, const void* graph, const void* eager,
                               double tolerance, cudaStream_t stream);
  // Bitwise over `bytes` raw bytes.
  [[nodiscard]] Status EnqueueBytes(int slot, const void* graph, const void* eager, size_t bytes, cudaStream_t stream);
  // Bitwise against `fill` in every byte (read as the eager side).
  [[nodiscard]] Status EnqueueFill(int slot, const void* graph, unsigned char fill, size_t bytes, cudaStream_t stream);

  // Waits for `stream` and reads what slot `slot`'s latest comparison found.
  [[nodiscard]] StatusOr<ElementDifference> ReadDifference(int slot, cudaStream_t stream);
  // The same as text: FirstDifference's ("element 3: graph 2.5, eager 3"),
  // or FormatByteDifference's for EnqueueBytes; empty when equal.
  [[nodiscard]] StatusOr<std::string> Read(int slot, cudaStream_t stream);

  // Slots [0, count) as Read words them, after one copy and one wait.
  [[nodiscard]] StatusOr<std::vector<std::string>> ReadFirst(int count, cudaStream_t stream);

  // Enqueue into slot 0 and Read it.
  [[nodiscard]] StatusOr<std::string> FirstDifference(const TensorRef& layout, const void* graph, const void* eager,
                                                      double tolerance, cudaStream_t stream);

 private:
  enum class Kind : uint8_t { kNone, kEmpty, kElements, kBytes };
  Status CheckSlot(int slot) const;
  Status Launch(int slot, const diff::Params& params, cudaStream_t stream);
  Status EnqueueRaw(int slot, const void* graph, const void* eager, int fill, size_t bytes, cudaStream_t stream);
  ElementDifference Decode(int slot, const diff::DeviceResult& r) const;
  std::string Format(int slot, const ElementDifference& d) const;

  DeviceMemory memory_;
  diff::DeviceResult* results_ = nullptr;
  std::vector<Kind> kinds_;
  std::vector<DType> dtypes_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_VERIFY_INTERNAL_DEVICE_DIFF_H_
