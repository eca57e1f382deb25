// SPDX-License-Identifier: Apache-2.0
// Padding: a method instance's state under on_new_shape=pad. A call of batch
// b replays the graph of the smallest bucket B >= b, captured for the call's
// tensors seen at batch B (same pointers and strides, dim 0 = B); the heads
// copy b rows and zero the rest, the tails copy b rows out, and each
// launch's b reaches the graph through the rows ring (PadRows), so a replay
// makes the CUDA calls of any replay whatever its b. With no buckets listed,
// BucketLearner chooses them from the batches seen. A call whose padded
// replay would take longer than its own rows run eagerly runs eagerly
// (EagerInstead): by MethodFlags::max_padding, else by what PadTimer
// measured (docs/design.md "Serving").
#ifndef ENCORE_GRAPH_PAD_INTERNAL_PADDING_H_
#define ENCORE_GRAPH_PAD_INTERNAL_PADDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include "encore/core/tensor.h"
#include "encore/policy/internal/binding_policy.h"
#include "encore/policy/internal/learned_buckets.h"
#include "encore/policy/internal/padding_cost.h"
#include "encore/policy/method_flags.h"
#include "encore/graph/binding/internal/address_set.h"
#include "encore/graph/pad/internal/pad_rows.h"
#include "encore/graph/pad/internal/pad_timer.h"

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
  // Why a call of `batch` that no bucket holds, or that EagerInstead sends
  // to an eager run, runs eagerly (an eager_reason code).
  std::string_view EagerReason(int64_t batch) const;
  // The call's tensors seen at `rows`, in storage kept for the next call.
  PaddedArgs Views(Args inputs, Args outputs, int64_t rows);

  // Never slower than eager: whether a call of `batch` in a bucket of
  // `rows` runs eagerly instead (max_padding's rule when set, else the
  // measured one; never for a full bucket). Asked once per call: the
  // measured rule counts the calls it sends eagerly, and lets one in
  // MeasuredPadding::kSampleEvery of them replay so the bucket is timed
  // again. Inline: it runs on every padded replay.
  bool EagerInstead(int64_t batch, int64_t rows) {
    if (rows <= batch) return false;
    if (max_padding_ > 0) return PaddingBeyondLimit(max_padding_, batch, rows);
    return measured_ && cost_.RunEagerly(batch, rows);
  }
  // The measured rule is off with several ranks: each rank would decide
  // from its own times, and a replay's verification votes.
  void set_measured(bool on) { measured_ = on && on_ && max_padding_ == 0; }
  // Times this call when the measured rule wants a sample of it: a replay
  // of the bucket of `rows`, or an eager run of `rows` (its batch). Stop
  // follows every Start that returned true.
  bool StartTiming(cudaStream_t stream, bool replay, int64_t rows) {
    if (!measured_ || !(replay ? cost_.WantReplaySample(rows) : cost_.WantEagerSample(rows))) return false;
    return timer_.Start(cost_, stream, replay, rows);
  }
  void StopTiming(cudaStream_t stream, bool ok) { timer_.Stop(stream, ok); }
  const MeasuredPadding& cost() const { return cost_; }

  PadRows& rows() { return rows_; }

 private:
  const bool on_;
  const bool listed_;
  std::vector<int64_t> buckets_;
  const double max_padding_;
  bool measured_;
  MeasuredPadding cost_;
  PadTimer timer_;
  BucketLearner learner_;
  std::vector<TensorRef> in_views_;
  std::vector<TensorRef> out_views_;
  PadRows rows_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_PAD_INTERNAL_PADDING_H_
