// SPDX-License-Identifier: Apache-2.0
// Padding to buckets (ShapePolicy::kPad): the batch of a call, the bucket
// it runs in, and the call's tensors seen at the bucket's batch. Dim 0 of
// every input and output is the batch. Pure logic, no CUDA.
#ifndef ENCORE_POLICY_INTERNAL_PAD_POLICY_H_
#define ENCORE_POLICY_INTERNAL_PAD_POLICY_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/core/tensor.h"

namespace encore {

// The call's batch: input 0's dim 0 (output 0's when there are no inputs).
// InvalidArgument naming the tensor for a rank-0 tensor or one whose dim 0
// differs, and for a call with no tensors at all. Runs on every padded call,
// so it allocates nothing when the call is good.
StatusOr<int64_t> CallBatch(std::string_view method, std::span<const TensorRef> inputs,
                            std::span<const TensorRef> outputs);

// OK when rows [0, b) of every tensor are a byte prefix of it (dim 0 is
// outermost: its stride covers a whole row), so a graph can copy b rows and
// zero the rest; else InvalidArgument naming the tensor. Checked before a
// capture; a replay's signature match implies it.
Status CheckRowsArePrefix(std::string_view method, std::span<const TensorRef> inputs,
                          std::span<const TensorRef> outputs);

// The index of the smallest bucket >= batch in ascending `buckets`, or
// buckets.size() when the batch is larger than every bucket.
size_t BucketFor(std::span<const int64_t> buckets, int64_t batch);

// `tensors` as the graph of a bucket of `rows` sees them: the same data,
// dtype and strides, dim 0 set to `rows`. Reuses `out`'s storage.
void PaddedViews(std::span<const TensorRef> tensors, int64_t rows, std::vector<TensorRef>* out);

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_PAD_POLICY_H_
