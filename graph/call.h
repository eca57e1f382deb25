// SPDX-License-Identifier: Apache-2.0
// Call: what a method sees on each call. Its tensors are the caller's on
// eager and warmup calls and the graph's static buffers during a capture.
#ifndef ENCORE_GRAPH_CALL_H_
#define ENCORE_GRAPH_CALL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore {

class MethodInstance;

enum class CallKind { kEager, kWarmup, kCapture };
std::string_view CallKindName(CallKind k);

class Call {
 public:
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The stream the method must launch its work on (during a capture of a
  // call made on the legacy default stream, an internal stream).
  cudaStream_t stream() const { return stream_; }
  size_t num_inputs() const { return inputs_.size(); }
  // An empty TensorRef (null data, rank 0) when i is out of range.
  const TensorRef& input(size_t i) const;
  size_t num_outputs() const { return outputs_.size(); }
  const TensorRef& output(size_t i) const;
  CallKind kind() const { return kind_; }
  // 1-based count of the method's calls, this one included.
  int64_t index() const { return index_; }

  // Scratch memory for this call. Eager and warmup calls get stream-ordered
  // memory returned at the end of the call; during a capture the memory keeps
  // its address for the graph's life.
  StatusOr<void*> Allocate(size_t bytes);

  // Checks a device boolean without a host sync; capturable. What a false
  // value does depends on the method's `checks` flag (see MethodFlags).
  Status Check(const bool* device_cond, std::string_view message);

 private:
  friend class MethodInstance;
  Call(MethodInstance* method, cudaStream_t stream, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
       CallKind kind, int64_t index)
      : method_(method), stream_(stream), inputs_(inputs), outputs_(outputs), kind_(kind), index_(index) {}

  MethodInstance* method_;
  cudaStream_t stream_;
  std::span<const TensorRef> inputs_;
  std::span<const TensorRef> outputs_;
  CallKind kind_;
  int64_t index_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CALL_H_
