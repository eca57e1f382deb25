// SPDX-License-Identifier: Apache-2.0
// Learned buckets (ShapePolicy::kPad with no buckets listed): from the batch
// sizes a method has seen, the at most max_graphs bucket sizes that minimise
// the rows padded, chosen by an exact dynamic programme over the histogram,
// and a learner that reviews that choice on a schedule that slows down, so a
// shifting workload is followed without recapturing on every call. Pure
// logic, no CUDA.
#ifndef ENCORE_POLICY_INTERNAL_LEARNED_BUCKETS_H_
#define ENCORE_POLICY_INTERNAL_LEARNED_BUCKETS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace encore {

// One bar of a histogram of batch sizes.
struct BatchCount {
  int64_t batch = 0;
  int64_t count = 0;
  friend bool operator==(const BatchCount&, const BatchCount&) = default;
};

struct BucketChoice {
  std::vector<int64_t> buckets;  // ascending; the last is the `top` asked for
  int64_t padded_rows = 0;       // sum over the histogram of count * (bucket - batch)
};

// Candidate bucket sizes the programme considers at most: every distinct
// batch up to this many, else this many spread evenly over them by rank.
inline constexpr size_t kMaxBucketCandidates = 1024;

// The buckets (at most `max_buckets`, the largest `top`) that minimise padded
// rows for `hist` (ascending batches, each <= top). Exact: an optimal
// choice only ever uses seen batches and `top`, and the programme tries
// every split of the sorted batches, O(max_buckets * n^2) for n distinct
// batches (n capped at kMaxBucketCandidates). Empty for an empty histogram.
BucketChoice ChooseBuckets(std::span<const BatchCount> hist, int max_buckets, int64_t top);

struct PaddingCost {
  int64_t padded_rows = 0;      // over the calls some bucket covers
  int64_t uncovered_calls = 0;  // calls larger than every bucket
};
PaddingCost CostOf(std::span<const BatchCount> hist, std::span<const int64_t> buckets);

// The largest bucket for a largest batch seen of `max_batch`: rounded up to
// a multiple of an eighth of its power of two (at most 12.5% more; exact up
// to 8), so a batch a little larger than any seen so far still replays
// instead of running eagerly.
int64_t TopBucketFor(int64_t max_batch);

class BucketLearner {
 public:
  struct Options {
    int64_t first_review = 32;    // calls observed before the first choice
    int64_t max_interval = 4096;  // the gap between reviews doubles up to this
    int64_t min_gap = 16;         // an uncovered batch brings a review this close
    double min_gain = 0.10;       // a new choice must pad this much less
    int64_t window = 1 << 15;     // counts are halved when they sum past this
  };

  explicit BucketLearner(int max_buckets) : BucketLearner(max_buckets, Options{}) {}
  BucketLearner(int max_buckets, Options options);

  // One call of `batch`; `covered`: whether a current bucket holds it (a
  // batch above them all brings the next review forward). O(1) for batches
  // below 4096.
  void Observe(int64_t batch, bool covered);
  bool review_due() const { return observed_ >= next_review_; }
  // Chooses buckets for the histogram and schedules the next review. The
  // new choice when it differs from `current` and covers a batch `current`
  // does not or pads at least min_gain less; nullopt to keep `current`.
  std::optional<std::vector<int64_t>> Review(std::span<const int64_t> current);

  std::vector<BatchCount> Histogram() const;
  int64_t observed() const { return observed_; }
  int64_t next_review() const { return next_review_; }
  int64_t max_batch() const { return max_seen_; }
  // Forgets everything (Release).
  void Reset();

 private:
  static constexpr int64_t kDense = 4096;
  void Decay();

  const int max_buckets_;
  const Options options_;
  std::vector<int64_t> dense_;             // counts of batches below kDense
  std::map<int64_t, int64_t> sparse_;      // counts of larger batches
  int64_t weight_ = 0;                     // sum of counts (decayed)
  int64_t max_seen_ = 0;                   // never decays: coverage is kept
  int64_t observed_ = 0;
  int64_t last_review_ = 0;
  int64_t interval_ = 0;
  int64_t next_review_ = 0;
};

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_LEARNED_BUCKETS_H_
