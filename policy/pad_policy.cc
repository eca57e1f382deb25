// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/pad_policy.h"

#include <algorithm>
#include <string>

namespace encore {
namespace {

const char* kWhat[] = {"input", "output"};

Status BadTensor(std::string_view method, int kind, size_t i, const std::string& why) {
  return InvalidArgumentError("method '" + std::string(method) + "': " + kWhat[kind] + " " + std::to_string(i) + " " +
                              why + "; on_new_shape=pad takes dim 0 of every input and output as the batch");
}

}  // namespace

StatusOr<int64_t> CallBatch(std::string_view method, std::span<const TensorRef> inputs,
                            std::span<const TensorRef> outputs) {
  const std::span<const TensorRef> lists[] = {inputs, outputs};
  const int first_kind = inputs.empty() ? 1 : 0;
  if (lists[first_kind].empty()) {
    return InvalidArgumentError("method '" + std::string(method) +
                                "': a call with no inputs and no outputs has no batch; on_new_shape=pad needs one");
  }
  const TensorRef& first = lists[first_kind][0];
  if (first.shape.size() == 0) return BadTensor(method, first_kind, 0, "has rank 0");
  const int64_t batch = first.shape[0];
  for (int kind = 0; kind < 2; ++kind) {
    for (size_t i = 0; i < lists[kind].size(); ++i) {
      const TensorRef& t = lists[kind][i];
      if (t.shape.size() == 0) return BadTensor(method, kind, i, "has rank 0");
      if (t.shape[0] != batch) {
        return BadTensor(method, kind, i,
                         "has " + std::to_string(t.shape[0]) + " in dim 0, but " + kWhat[first_kind] + " 0 has " +
                             std::to_string(batch));
      }
    }
  }
  return batch;
}

Status CheckRowsArePrefix(std::string_view method, std::span<const TensorRef> inputs,
                          std::span<const TensorRef> outputs) {
  const std::span<const TensorRef> lists[] = {inputs, outputs};
  for (int kind = 0; kind < 2; ++kind) {
    for (size_t i = 0; i < lists[kind].size(); ++i) {
      const TensorRef& t = lists[kind][i];
      const Strides st = t.effective_strides();
      // Elements one row spans: 1 + the offset of its last element.
      int64_t row = 1;
      for (int d = 1; d < t.shape.size(); ++d) {
        if (t.shape[d] == 0) row = 0;
        if (row > 0) row += (t.shape[d] - 1) * st[d];
      }
      if (row > 0 && st[0] < row) {
        return BadTensor(method, kind, i,
                         "has stride " + std::to_string(st[0]) + " in dim 0, less than the " + std::to_string(row) +
                             " elements of a row: its first b rows are not the start of its memory, so they cannot "
                             "be padded");
      }
    }
  }
  return OkStatus();
}

size_t BucketFor(std::span<const int64_t> buckets, int64_t batch) {
  return static_cast<size_t>(std::lower_bound(buckets.begin(), buckets.end(), batch) - buckets.begin());
}

void PaddedViews(std::span<const TensorRef> tensors, int64_t rows, std::vector<TensorRef>* out) {
  out->assign(tensors.begin(), tensors.end());
  for (TensorRef& t : *out) t.shape[0] = rows;
}

}  // namespace encore
