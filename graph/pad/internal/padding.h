// SPDX-License-Identifier: Apache-2.0
// Padding: a method instance's state under on_new_shape=pad. A call of batch
// b replays the graph of the smallest bucket B >= b, captured for the call's
// tensors seen at batch B (same pointers and strides, dim 0 = B); the heads
// copy b rows and zero the rest, the tails copy b rows out, and each
// launch's b reaches the graph through the rows ring (PadRows), so a replay
// makes the CUDA calls of any replay whatever its b. With no buckets listed,
// BucketLearner chooses them from the batches seen.
#ifndef ENCORE_GRAPH_PAD_INTERNAL_PADDING_H_
#define ENCORE_GRAPH_PAD_INTERNAL_PADDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/tensor.h"
#include "encore/policy/internal/binding_policy.h"
#include "encore/policy/internal/learned_buckets.h"
#include "encore/policy/method_flags.h"
#include "encore/graph/binding/internal/address_set.h"
#include "encore/graph/pad/internal/pad_rows.h"

namespace encore {

// Every graph of a method under on_new_shape=pad is staged (the caller's
// tensors hold only b rows), with this reason.
BindingChoice PaddedBinding();

struct PaddedArgs {
  Args inputs;
  Args outputs;
};

class Padding {
 public:
  explicit Padding(const MethodFlags& flags);
  Padding(const Padding&) = delete;
  Padding& operator=(const Padding&) = delete;

  bool on() const { return on_; }
  bool learned() const { return on_ && !listed_; }
  const std::vector<int64_t>& buckets() const { return buckets_; }
  // Graphs kept at most: max_graphs, or every listed bucket.
  int GraphCap(int max_graphs) const;

  // Learned buckets: counts the call's batch; whether a review is due.
  bool Observe(int64_t batch);
  // The learner's review; the buckets before it when the choice changed.
  std::optional<std::vector<int64_t>> Review();
  int64_t observed() const { return learner_.observed(); }
  // Precapture before any review: the given batch is the first bucket.
  void Seed(int64_t batch);

  // The rows of the smallest bucket holding `batch`, or -1 (none does, or
  // batch is 0).
  int64_t BucketRows(int64_t batch) const;
  // Why a call of `batch` that no bucket holds runs eagerly (an
  // eager_reason code).
  std::string_view EagerReason(int64_t batch) const;
  // The call's tensors seen at `rows`, in storage kept for the next call.
  PaddedArgs Views(Args inputs, Args outputs, int64_t rows);

  PadRows& rows() { return rows_; }

 private:
  const bool on_;
  const bool listed_;
  std::vector<int64_t> buckets_;
  BucketLearner learner_;
  std::vector<TensorRef> in_views_;
  std::vector<TensorRef> out_views_;
  PadRows rows_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_PAD_INTERNAL_PADDING_H_
