// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/call_signature.h"

#include <cstdint>

namespace encore {
namespace {

// Strides of size-1 dims never move an element, so they do not have to agree.
bool StridesMatch(const TensorSignature& sig, const TensorRef& t, int* bad_dim, int64_t* given) {
  if (t.strides.empty()) {
    // Contiguous: compare with the contiguous strides of the shape without
    // building them.
    int64_t acc = 1;
    for (int i = t.shape.size() - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && sig.strides[i] != acc) {
        *bad_dim = i;
        *given = acc;
        return false;
      }
      // Saturating, as TensorRef::contiguous_strides is: a shape with a
      // size-0 dim may have strides beyond int64.
      if (__builtin_mul_overflow(acc, t.shape[i] > 0 ? t.shape[i] : 1, &acc)) acc = INT64_MAX;
    }
    return true;
  }
  for (int i = 0; i < t.shape.size(); ++i) {
    // A negative stride never matches, even on a size-1 dim: validation
    // rejects it, and a matching signature must imply a valid tensor.
    if ((t.shape[i] != 1 && sig.strides[i] != t.strides[i]) || t.strides[i] < 0) {
      *bad_dim = i;
      *given = t.strides[i];
      return false;
    }
  }
  return true;
}

bool TensorMatches(const TensorSignature& sig, const TensorRef& t) {
  // Dims beyond kMaxRank were dropped, so the kept ones can equal a captured
  // rank-8 shape: such a call must reach validation, which rejects it.
  if (t.shape.overflowed() || t.strides.overflowed()) return false;
  if (t.dtype != sig.dtype || t.shape.size() != sig.shape.size()) return false;
  for (int i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] != sig.shape[i]) return false;
  }
  if (!t.strides.empty() && t.strides.size() != t.shape.size()) return false;
  int dim;
  int64_t given;
  return StridesMatch(sig, t, &dim, &given);
}

// The first difference as the message fragment after "input 0 ", or empty
// when `t` matches `sig`. Rank and sizes come first: they are what a user
// changes on purpose, and the spec's example names the dim.
std::string Describe(const TensorSignature& sig, const TensorRef& t) {
  if (t.shape.overflowed()) {
    return "has more than " + std::to_string(Dims::kMaxRank) + " dims, captured with rank " +
           std::to_string(sig.shape.size());
  }
  if (t.strides.overflowed()) return "has more than " + std::to_string(Dims::kMaxRank) + " strides";
  if (t.shape.size() != sig.shape.size()) {
    return "has rank " + std::to_string(t.shape.size()) + ", captured with " + std::to_string(sig.shape.size());
  }
  for (int i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] != sig.shape[i]) {
      return "has size " + std::to_string(t.shape[i]) + " in dim " + std::to_string(i) + ", captured with " +
             std::to_string(sig.shape[i]);
    }
  }
  if (t.dtype != sig.dtype) {
    return "has dtype " + std::string(DTypeName(t.dtype)) + ", captured with " + std::string(DTypeName(sig.dtype));
  }
  if (!t.strides.empty() && t.strides.size() != t.shape.size()) {
    return "has " + std::to_string(t.strides.size()) + " strides for rank " + std::to_string(t.shape.size());
  }
  int dim = 0;
  int64_t given = 0;
  if (!StridesMatch(sig, t, &dim, &given)) {
    return "has stride " + std::to_string(given) + " in dim " + std::to_string(dim) + ", captured with " +
           std::to_string(sig.strides[dim]);
  }
  return {};
}

std::string Plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

TensorSignature TensorSignature::Of(const TensorRef& t) {
  // `t` was validated, so span_bytes() is exact; it saturates rather than
  // wraps on a tensor that was not.
  return TensorSignature{t.dtype, t.shape, t.effective_strides(), t.span_bytes()};
}

CallSignature CallSignature::Of(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  CallSignature s;
  s.inputs_.reserve(inputs.size());
  s.outputs_.reserve(outputs.size());
  for (const TensorRef& t : inputs) s.inputs_.push_back(TensorSignature::Of(t));
  for (const TensorRef& t : outputs) s.outputs_.push_back(TensorSignature::Of(t));
  return s;
}

bool CallSignature::Matches(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) const {
  if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!TensorMatches(inputs_[i], inputs[i])) return false;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!TensorMatches(outputs_[i], outputs[i])) return false;
  }
  return true;
}

Status CallSignature::Compare(std::string_view method, std::span<const TensorRef> inputs,
                              std::span<const TensorRef> outputs) const {
  if (Matches(inputs, outputs)) return OkStatus();
  std::string head = "method '" + std::string(method) + "': ";
  if (inputs.size() != inputs_.size()) {
    return InvalidArgumentError(head + Plural(inputs.size(), "input") + " given, captured with " +
                                std::to_string(inputs_.size()));
  }
  if (outputs.size() != outputs_.size()) {
    return InvalidArgumentError(head + Plural(outputs.size(), "output") + " given, captured with " +
                                std::to_string(outputs_.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string d = Describe(inputs_[i], inputs[i]);
    if (!d.empty()) return InvalidArgumentError(head + "input " + std::to_string(i) + " " + d);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string d = Describe(outputs_[i], outputs[i]);
    if (!d.empty()) return InvalidArgumentError(head + "output " + std::to_string(i) + " " + d);
  }
  return InternalError(head + "call differs from the capture in a way the guard cannot name");
}

std::string CallSignature::ToString() const {
  auto list = [](const std::vector<TensorSignature>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s += std::string(DTypeName(v[i].dtype)) + v[i].shape.ToString();
    }
    return s + "]";
  };
  return "in=" + list(inputs_) + " out=" + list(outputs_);
}

std::string RefusalRemedy(std::string_view method) {
  // The policies that accept a new shape; MethodFlags or the flags text
  // (ENCORE_METHOD_FLAGS) set them.
  return "; set on_new_shape=recapture|eager|pad for '" + std::string(method) + "', or call Release()";
}

}  // namespace encore
