// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/pad/internal/padding.h"

#include <algorithm>

#include "encore/graph/method_report.h"
#include "encore/policy/internal/pad_policy.h"

namespace encore {

BindingChoice PaddedBinding() {
  return {Binding::kStaged,
          "on_new_shape=pad: staged, because the caller's tensors hold only the call's b rows of the bucket's B: "
          "the graph copies b rows in, zeroes the rest and copies b rows out"};
}

Padding::Padding(const MethodFlags& flags)
    : on_(flags.on_new_shape == ShapePolicy::kPad),
      listed_(!flags.buckets.empty()),
      buckets_(flags.buckets),
      max_padding_(flags.max_padding),
      measured_(on_ && flags.max_padding == 0),
      learner_(flags.max_graphs) {}

int Padding::GraphCap(int max_graphs) const {
  if (on_ && listed_) return std::max(max_graphs, static_cast<int>(buckets_.size()));
  return max_graphs;
}

bool Padding::Observe(int64_t batch) {
  if (!learned() || batch <= 0) return false;
  learner_.Observe(batch, BucketRows(batch) > 0);
  return learner_.review_due();
}

std::optional<std::vector<int64_t>> Padding::Review() {
  std::optional<std::vector<int64_t>> next = learner_.Review(buckets_);
  if (!next) return std::nullopt;
  std::vector<int64_t> previous = std::move(buckets_);
  buckets_ = *std::move(next);
  cost_.KeepBuckets(buckets_);
  return previous;
}

void Padding::Seed(int64_t batch) {
  if (learned() && buckets_.empty() && batch > 0) buckets_ = {batch};
}

int64_t Padding::BucketRows(int64_t batch) const {
  if (batch <= 0) return -1;
  const size_t b = BucketFor(buckets_, batch);
  return b < buckets_.size() ? buckets_[b] : -1;
}

std::string_view Padding::EagerReason(int64_t batch) const {
  if (batch <= 0) return eager_reason::kEmptyBatch;
  if (BucketRows(batch) > 0) return eager_reason::kPadding;
  return buckets_.empty() ? eager_reason::kNoBuckets : eager_reason::kAboveBuckets;
}

PaddedArgs Padding::Views(Args inputs, Args outputs, int64_t rows) {
  PaddedViews(inputs, rows, &in_views_);
  PaddedViews(outputs, rows, &out_views_);
  return PaddedArgs{in_views_, out_views_};
}

}  // namespace encore
