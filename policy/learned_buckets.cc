// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/learned_buckets.h"

#include <algorithm>
#include <limits>

namespace encore {
namespace {

// Prefix sums over the points (distinct batches, then `top` with no weight
// when no batch equals it): the cost of serving points [lo, hi] with the
// bucket at point hi is one subtraction each.
struct Prefix {
  std::vector<int64_t> x;   // the points
  std::vector<int64_t> w;   // w[i]: calls at points < i
  std::vector<int64_t> s;   // s[i]: rows of calls at points < i

  int64_t Cost(size_t lo, size_t hi) const {  // inclusive
    return x[hi] * (w[hi + 1] - w[lo]) - (s[hi + 1] - s[lo]);
  }
};

Prefix MakePrefix(std::span<const BatchCount> hist, int64_t top) {
  Prefix p;
  p.w.push_back(0);
  p.s.push_back(0);
  for (const BatchCount& h : hist) {
    p.x.push_back(h.batch);
    p.w.push_back(p.w.back() + h.count);
    p.s.push_back(p.s.back() + h.count * h.batch);
  }
  if (p.x.empty() || p.x.back() < top) {
    p.x.push_back(top);
    p.w.push_back(p.w.back());
    p.s.push_back(p.s.back());
  }
  return p;
}

// The points a bucket may sit at: all of them, or kMaxBucketCandidates
// spread by rank, the last point always included.
std::vector<size_t> Candidates(size_t n) {
  std::vector<size_t> c;
  if (n <= kMaxBucketCandidates) {
    for (size_t i = 0; i < n; ++i) c.push_back(i);
    return c;
  }
  for (size_t k = 1; k <= kMaxBucketCandidates; ++k) c.push_back((n * k) / kMaxBucketCandidates - 1);
  return c;
}

}  // namespace

BucketChoice ChooseBuckets(std::span<const BatchCount> hist, int max_buckets, int64_t top) {
  BucketChoice out;
  if (hist.empty() || max_buckets < 1) return out;
  const Prefix p = MakePrefix(hist, top);
  const std::vector<size_t> c = Candidates(p.x.size());
  const size_t m = c.size();
  const size_t k_max = std::min<size_t>(static_cast<size_t>(max_buckets), m);
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  // f[k][j]: least padding covering points [0, c[j]] with k + 1 buckets, the
  // last at c[j]; from[k][j]: the candidate of the bucket before it.
  std::vector<std::vector<int64_t>> f(k_max, std::vector<int64_t>(m, kInf));
  std::vector<std::vector<size_t>> from(k_max, std::vector<size_t>(m, 0));
  for (size_t j = 0; j < m; ++j) f[0][j] = p.Cost(0, c[j]);
  for (size_t k = 1; k < k_max; ++k) {
    for (size_t j = k; j < m; ++j) {
      for (size_t i = k - 1; i < j; ++i) {
        if (f[k - 1][i] == kInf) continue;
        const int64_t v = f[k - 1][i] + p.Cost(c[i] + 1, c[j]);
        if (v < f[k][j]) {
          f[k][j] = v;
          from[k][j] = i;
        }
      }
    }
  }
  // Fewest buckets among the best: a bucket that saves nothing is no graph.
  size_t best_k = 0;
  for (size_t k = 1; k < k_max; ++k) {
    if (f[k][m - 1] < f[best_k][m - 1]) best_k = k;
  }
  out.padded_rows = f[best_k][m - 1];
  size_t j = m - 1;
  for (size_t k = best_k + 1; k-- > 0;) {
    out.buckets.push_back(p.x[c[j]]);
    if (k > 0) j = from[k][j];
  }
  std::reverse(out.buckets.begin(), out.buckets.end());
  return out;
}

PaddingCost CostOf(std::span<const BatchCount> hist, std::span<const int64_t> buckets) {
  PaddingCost cost;
  for (const BatchCount& h : hist) {
    auto it = std::lower_bound(buckets.begin(), buckets.end(), h.batch);
    if (it == buckets.end()) {
      cost.uncovered_calls += h.count;
    } else {
      cost.padded_rows += h.count * (*it - h.batch);
    }
  }
  return cost;
}

int64_t TopBucketFor(int64_t max_batch) {
  if (max_batch <= 8) return max_batch;
  int64_t pow2 = 1;
  while (pow2 <= max_batch / 2) pow2 *= 2;  // the largest power of two <= max_batch
  const int64_t step = pow2 / 8;
  return (max_batch + step - 1) / step * step;
}

BucketLearner::BucketLearner(int max_buckets, Options options) : max_buckets_(max_buckets), options_(options) {
  Reset();
}

void BucketLearner::Reset() {
  dense_.clear();
  sparse_.clear();
  weight_ = max_seen_ = observed_ = last_review_ = 0;
  interval_ = options_.first_review;
  next_review_ = options_.first_review;
}

void BucketLearner::Observe(int64_t batch, bool covered) {
  ++observed_;
  if (batch < kDense) {
    if (static_cast<int64_t>(dense_.size()) <= batch) dense_.resize(static_cast<size_t>(batch) + 1, 0);
    ++dense_[static_cast<size_t>(batch)];
  } else {
    ++sparse_[batch];
  }
  ++weight_;
  max_seen_ = std::max(max_seen_, batch);
  // A batch no bucket holds runs eagerly: review soon, but no sooner than
  // min_gap after the last review, so a burst of new sizes is one review.
  if (!covered && observed_ >= options_.first_review) {
    next_review_ = std::min(next_review_, std::max(observed_, last_review_ + options_.min_gap));
  }
}

std::vector<BatchCount> BucketLearner::Histogram() const {
  std::vector<BatchCount> h;
  for (size_t b = 0; b < dense_.size(); ++b) {
    if (dense_[b] > 0) h.push_back({static_cast<int64_t>(b), dense_[b]});
  }
  for (const auto& [b, n] : sparse_) h.push_back({b, n});
  return h;
}

void BucketLearner::Decay() {
  // Old calls count half as much after each window, so a workload that
  // moved is followed; the largest batch seen is kept for coverage.
  weight_ = 0;
  for (int64_t& n : dense_) weight_ += (n /= 2);
  for (auto it = sparse_.begin(); it != sparse_.end();) {
    it->second /= 2;
    weight_ += it->second;
    it = it->second == 0 ? sparse_.erase(it) : std::next(it);
  }
}

std::optional<std::vector<int64_t>> BucketLearner::Review(std::span<const int64_t> current) {
  last_review_ = observed_;
  interval_ = std::min(interval_ * 2, options_.max_interval);
  next_review_ = observed_ + interval_;
  const std::vector<BatchCount> hist = Histogram();
  while (weight_ > options_.window) Decay();
  if (hist.empty()) return std::nullopt;
  BucketChoice choice = ChooseBuckets(hist, max_buckets_, TopBucketFor(max_seen_));
  const std::vector<int64_t>& next = choice.buckets;
  if (std::equal(next.begin(), next.end(), current.begin(), current.end())) return std::nullopt;
  const bool covers_more = current.empty() || current.back() < max_seen_;
  const PaddingCost now = CostOf(hist, current);
  const bool pads_less = choice.padded_rows < now.padded_rows &&
                         static_cast<double>(choice.padded_rows) <=
                             (1.0 - options_.min_gain) * static_cast<double>(now.padded_rows);
  if (covers_more || (now.uncovered_calls == 0 && pads_less)) return std::move(choice.buckets);
  return std::nullopt;
}

}  // namespace encore
