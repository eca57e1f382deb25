// SPDX-License-Identifier: Apache-2.0
// Call: what a method sees on each call. Its tensors are the caller's on
// eager and warmup calls and the graph's static buffers during a staged
// capture (or the caller's own buffers, which a direct graph is bound to).
#ifndef ENCORE_GRAPH_CALL_H_
#define ENCORE_GRAPH_CALL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore {

class Call;
using MethodFn = std::function<Status(Call&)>;

enum class CallKind { kEager, kWarmup, kCapture };
std::string_view CallKindName(CallKind k);

namespace internal {
class CallHost;
}  // namespace internal

class Call {
 public:
  // Drops what KeepWithGraph kept on a call that was not a capture (a
  // capture's owners have been handed to its graph by then).
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The stream the method must launch its work on (during a capture of a
  // call made on the legacy default stream, an internal stream; inside an
  // If or While body during a capture, the stream recording the body).
  cudaStream_t stream() const { return stream_; }
  size_t num_inputs() const { return inputs_.size(); }
  // An empty TensorRef (null data, rank 0) when i is out of range.
  const TensorRef& input(size_t i) const;
  size_t num_outputs() const { return outputs_.size(); }
  const TensorRef& output(size_t i) const;
  CallKind kind() const { return kind_; }
  // 1-based count of the method's calls, this one included.
  int64_t index() const { return index_; }
  // The stage this call runs (MethodSpec::stages); empty for a method given
  // as one fn.
  std::string_view stage() const { return stage_; }

  // Scratch memory for this call. Eager and warmup calls get stream-ordered
  // memory returned at the end of the call; during a capture the memory keeps
  // its address for the graph's life.
  StatusOr<void*> Allocate(size_t bytes);

  // Checks a device boolean without a host sync; capturable. What a false
  // value does depends on the method's `checks` flag (see MethodFlags).
  Status Check(const bool* device_cond, std::string_view message);

  // Runs `then_fn` when *device_cond is true at this point of the call. In
  // a capture this becomes a conditional node of the graph, taken per
  // replay on the device flag (no host read); eager calls read the flag.
  Status If(const bool* device_cond, const MethodFn& then_fn);
  // Runs `body_fn` while *device_cond is true (tested before each
  // iteration; the body updates it on the device), at most max_iterations
  // times (> 0, else InvalidArgument): a loop stopped by the bound makes the
  // method's next Run or Synchronize return FailedPrecondition.
  Status While(const bool* device_cond, const MethodFn& body_fn, int64_t max_iterations);

  // During a capture, `owner` lives as long as the graph being captured
  // (dropped when encore drops that graph, or at once if the capture,
  // instantiation or first launch fails); on any other call it is dropped
  // when the call returns. An adapter ties a framework's memory pool to a
  // graph this way.
  Status KeepWithGraph(std::shared_ptr<void> owner);

 private:
  friend class internal::CallHost;
  Call(internal::CallHost* host, cudaStream_t stream, std::span<const TensorRef> inputs,
       std::span<const TensorRef> outputs, CallKind kind, int64_t index, std::string_view stage, Call* parent)
      : host_(host), parent_(parent), stream_(stream), inputs_(inputs), outputs_(outputs), kind_(kind),
        index_(index), stage_(stage) {}
  Call& root() { return parent_ ? parent_->root() : *this; }

  internal::CallHost* host_;
  Call* parent_;  // the call whose If or While body this is, or null
  cudaStream_t stream_;
  std::span<const TensorRef> inputs_;
  std::span<const TensorRef> outputs_;
  CallKind kind_;
  int64_t index_;
  std::string_view stage_;
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CALL_H_
