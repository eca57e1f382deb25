// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/padding_cost.h"

#include <algorithm>
#include <iterator>

namespace encore {

bool PaddingBeyondLimit(double max_padding, int64_t batch, int64_t bucket_rows) {
  return max_padding > 0 && static_cast<double>(bucket_rows) > max_padding * static_cast<double>(batch);
}

MeasuredPadding::Bucket& MeasuredPadding::At(int64_t bucket) {
  for (Bucket& b : buckets_) {
    if (b.rows == bucket) return b;
  }
  buckets_.push_back(Bucket{bucket});
  return buckets_.back();
}

const MeasuredPadding::Bucket* MeasuredPadding::Find(int64_t bucket) const {
  for (const Bucket& b : buckets_) {
    if (b.rows == bucket) return &b;
  }
  return nullptr;
}

void MeasuredPadding::KeepBuckets(const std::vector<int64_t>& buckets) {
  std::erase_if(buckets_, [&](const Bucket& b) {
    return std::find(buckets.begin(), buckets.end(), b.rows) == buckets.end();
  });
}

bool MeasuredPadding::WantReplaySample(int64_t bucket) {
  const int64_t n = At(bucket).seen++;
  return n < kFirstSamples || n % kSampleEvery == 0;
}

bool MeasuredPadding::WantEagerSample(int64_t batch) {
  const int64_t n = eager_seen_++;
  if (n < kFirstSamples || n % kSampleEvery == 0) return true;
  return std::find(std::begin(recent_), std::end(recent_), batch) == std::end(recent_);
}

void MeasuredPadding::AddReplay(int64_t bucket, double us) {
  Bucket& b = At(bucket);
  ++b.samples;
  b.us += (us - b.us) / static_cast<double>(std::min(b.samples, kFirstSamples));
}

void MeasuredPadding::AddEager(int64_t batch, double us) {
  const double b = static_cast<double>(batch);
  w_ = w_ * kFade + 1;
  wb_ = wb_ * kFade + b;
  wbb_ = wbb_ * kFade + b * b;
  wt_ = wt_ * kFade + us;
  wbt_ = wbt_ * kFade + b * us;
  ++eager_samples_;
  recent_[recent_next_] = batch;
  recent_next_ = (recent_next_ + 1) % static_cast<int>(std::size(recent_));
  Refit();
}

void MeasuredPadding::Refit() {
  // The weighted variance of the batches, against their mean squared: below
  // a millionth the sizes are one size, and the fit cannot split a from c.
  const double det = w_ * wbb_ - wb_ * wb_;
  if (det <= 1e-6 * w_ * wbb_) {
    a_ = 0;
    c_ = wb_ > 0 ? wt_ / wb_ : 0;
    return;
  }
  c_ = (w_ * wbt_ - wb_ * wt_) / det;
  a_ = (wt_ - c_ * wb_) / w_;
  if (c_ < 0) {  // more rows never cost less: a flat cost
    c_ = 0;
    a_ = wt_ / w_;
  } else if (a_ < 0) {  // no negative fixed cost: through the origin
    a_ = 0;
    c_ = wbt_ / wbb_;
  }
}

std::optional<double> MeasuredPadding::ReplayUs(int64_t bucket) const {
  const Bucket* b = Find(bucket);
  if (b == nullptr || b->samples < kMinSamples) return std::nullopt;
  return b->us;
}

std::optional<double> MeasuredPadding::EagerUs(int64_t batch) const {
  if (eager_samples_ < kMinSamples) return std::nullopt;
  return a_ + c_ * static_cast<double>(batch);
}

bool MeasuredPadding::EagerIsFaster(int64_t batch, int64_t bucket) const {
  const Bucket* b = Find(bucket);
  if (b == nullptr || b->samples < kMinSamples || eager_samples_ < kMinSamples) return false;
  return b->us > a_ + c_ * static_cast<double>(batch);
}

}  // namespace encore
