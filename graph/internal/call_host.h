// SPDX-License-Identifier: Apache-2.0
// CallHost: what a Call calls back into, the method instance that runs it.
// The public Call knows only this interface, so graph/call.h needs nothing
// of the engine and the engine's packages can build Calls.
#ifndef ENCORE_GRAPH_INTERNAL_CALL_HOST_H_
#define ENCORE_GRAPH_INTERNAL_CALL_HOST_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/call.h"

namespace encore::internal {

class CallHost {
 public:
  virtual StatusOr<void*> Allocate(Call& call, size_t bytes) = 0;
  virtual Status Check(Call& call, const bool* device_cond, std::string_view message) = 0;
  virtual Status If(Call& call, const bool* device_cond, const MethodFn& then_fn) = 0;
  virtual Status While(Call& call, const bool* device_cond, const MethodFn& body_fn, int64_t max_iterations) = 0;

  // A Call for `host` (the constructor is private to Call and this class).
  // `parent`: the call whose If or While body the new one runs.
  static Call MakeCall(CallHost* host, cudaStream_t stream, std::span<const TensorRef> inputs,
                       std::span<const TensorRef> outputs, CallKind kind, int64_t index, std::string_view stage,
                       Call* parent = nullptr) {
    return Call(host, stream, inputs, outputs, kind, index, stage, parent);
  }
  static std::span<const TensorRef> Inputs(const Call& call) { return call.inputs_; }
  static std::span<const TensorRef> Outputs(const Call& call) { return call.outputs_; }
  // A call like `call` on `stream` (an If or While body's).
  static Call BodyCall(Call& call, cudaStream_t stream) {
    return Call(call.host_, stream, call.inputs_, call.outputs_, call.kind_, call.index_, call.stage_, &call);
  }
  // What Call::KeepWithGraph kept on `call` (and its bodies' calls), moved
  // out: a capture hands it to the graph it made.
  static std::vector<std::shared_ptr<void>> TakeKept(Call& call) { return std::move(call.kept_); }

 protected:
  ~CallHost() = default;
};

}  // namespace encore::internal

#endif  // ENCORE_GRAPH_INTERNAL_CALL_HOST_H_
