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
  Bucket& b = At(bucket);
  const int64_t n = b.seen++;
  if (b.probe) {
    b.probe = false;
    return true;
  }
  return n < kFirstSamples || n % kSampleEvery == 0;
}

bool MeasuredPadding::WantEagerSample(int64_t batch) {
  const int64_t n = eager_seen_++;
  if (n < kFirstSamples || n % kSampleEvery == 0) return true;
  return std::find(std::begin(recent_), std::end(recent_), batch) == std::end(recent_);
}

void MeasuredPadding::AddReplay(int64_t bucket, double us) {
  Bucket& b = At(bucket);
  b.recent[b.samples % kFirstSamples] = us;
  ++b.samples;
  // The lower median of the ring: what a replay pays once (an executable
  // instantiated inside it, its upload) only ever adds time, so such
  // samples, up to half of the last few, do not raise it.
  const size_t n = static_cast<size_t>(std::min(b.samples, kFirstSamples));
  double sorted[kFirstSamples];
  for (size_t i = 0; i < n; ++i) {  // an insertion sort of at most 8
    size_t j = i;
    for (; j > 0 && sorted[j - 1] > b.recent[i]; --j) sorted[j] = sorted[j - 1];
    sorted[j] = b.recent[i];
  }
  b.us = sorted[(n - 1) / 2];
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

bool MeasuredPadding::RunEagerly(int64_t batch, int64_t bucket) {
  if (!EagerIsFaster(batch, bucket)) return false;
  Bucket& b = At(bucket);
  // Calls that run eagerly time no replay: without this one in
  // kSampleEvery, a bucket measured slow once (a learned bucket above every
  // batch seen is never full) would run every call eagerly for good.
  if (++b.refused % kSampleEvery != 0) return true;
  b.probe = true;
  return false;
}

}  // namespace encore
