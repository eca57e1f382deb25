// SPDX-License-Identifier: Apache-2.0
// CallSignature: what a graph baked in about its inputs and outputs (count,
// dtype, sizes, strides), and the replay guard that compares a call with it.
// Pure logic, no CUDA; the comparison allocates nothing when the call matches,
// since it runs before every replay.
#ifndef ENCORE_POLICY_INTERNAL_CALL_SIGNATURE_H_
#define ENCORE_POLICY_INTERNAL_CALL_SIGNATURE_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore {

struct TensorSignature {
  DType dtype = DType::kFloat32;
  Shape shape;
  Strides strides;  // effective strides, never empty for rank > 0
  size_t span_bytes = 0;

  static TensorSignature Of(const TensorRef& t);
  friend bool operator==(const TensorSignature&, const TensorSignature&) = default;
};

class CallSignature {
 public:
  CallSignature() = default;
  static CallSignature Of(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs);

  const std::vector<TensorSignature>& inputs() const { return inputs_; }
  const std::vector<TensorSignature>& outputs() const { return outputs_; }

  // True when the call could replay a graph captured with this signature.
  // False for a tensor given more than kMaxRank sizes or strides, whose
  // dropped dims the signature cannot see: validation rejects it.
  bool Matches(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) const;

  // OK when Matches; otherwise an InvalidArgument that names the method, the
  // tensor, what differs and both values, for the first difference found:
  //   method 'forward': input 0 has size 4 in dim 1, captured with 3
  Status Compare(std::string_view method, std::span<const TensorRef> inputs,
                 std::span<const TensorRef> outputs) const;

  // "in=[float32(2,3,4,4)] out=[float32(2,3)]", for logs and reports.
  std::string ToString() const;

  friend bool operator==(const CallSignature&, const CallSignature&) = default;

 private:
  std::vector<TensorSignature> inputs_;
  std::vector<TensorSignature> outputs_;
};

// What a refused call's message ends with, after Compare's text: how to make
// such calls work ("; set on_new_shape=recapture|eager|pad for 'forward', or
// call Release()").
std::string RefusalRemedy(std::string_view method);

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_CALL_SIGNATURE_H_
