// SPDX-License-Identifier: Apache-2.0
// Never slower than eager (on_new_shape=pad): whether a call of batch b
// that its bucket B > b would pad runs eagerly instead. With
// MethodFlags::max_padding set the rule is exactly that bucket's rows
// against max_padding * b; without it, MeasuredPadding compares what
// encore measured: each bucket's replay and the method's eager runs, both
// as the device time between two events around the call
// (graph/pad/internal/pad_timer.h reads them later, never waiting). Pure
// logic, no CUDA.
#ifndef ENCORE_POLICY_INTERNAL_PADDING_COST_H_
#define ENCORE_POLICY_INTERNAL_PADDING_COST_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace encore {

// max_padding > 0: whether a bucket of `bucket_rows` holds more than
// max_padding * batch rows (the call then runs eagerly). False when unset.
bool PaddingBeyondLimit(double max_padding, int64_t batch, int64_t bucket_rows);

// What a padded replay and an eager run cost, as measured, and the
// decision between them. Note [Measured padding]: a replay of bucket B
// runs B rows whatever the call's b, so its time is one number per bucket:
// the lower median of its last kFirstSamples samples, so that the few
// replays that pay once for something (an executable instantiated for an
// address set seen again, its first launch's upload) do not stand for
// every later replay. An eager run of b rows is modelled as a + c * b
// (weighted least squares over recent samples, older ones fading), which
// keeps the fixed cost of launching its kernels apart from the cost per
// row. With samples of one batch size only the fit cannot tell a from c
// and takes c = mean time per row (a = 0): that underestimates eager runs
// of fewer rows, so such a call runs eagerly, is timed, and its sample
// corrects the fit for the next one. Either side with fewer than
// kMinSamples samples decides nothing: the call replays. A bucket whose
// calls run eagerly would never be timed again (only full calls would
// replay it), so one in kSampleEvery of the calls RunEagerly sends eagerly
// replays instead and is timed: a replay time measured too high, or one
// that changed, is corrected.
class MeasuredPadding {
 public:
  static constexpr int64_t kMinSamples = 3;
  // Calls of each kind timed before sampling thins out to one in
  // kSampleEvery (a replay: per bucket).
  static constexpr int64_t kFirstSamples = 8;
  static constexpr int64_t kSampleEvery = 32;
  // How much an eager sample outweighs the one before it: the fit follows
  // a workload that changed within a few dozen samples.
  static constexpr double kFade = 0.95;

  // Whether this replay of `bucket` (or this eager run of `batch` rows) is
  // to be timed; counts it. An eager run of a batch not among the last few
  // timed is always timed, so the fit learns a new size at once; so is the
  // replay RunEagerly let through to re-measure its bucket.
  bool WantReplaySample(int64_t bucket);
  bool WantEagerSample(int64_t batch);
  // A measured span, microseconds.
  void AddReplay(int64_t bucket, double us);
  void AddEager(int64_t batch, double us);

  // Forgets the replays of buckets no longer in `buckets` (learned buckets
  // that changed).
  void KeepBuckets(const std::vector<int64_t>& buckets);

  // The measured replay of `bucket`, and the fitted eager run of `batch`
  // rows; nullopt until kMinSamples samples.
  std::optional<double> ReplayUs(int64_t bucket) const;
  std::optional<double> EagerUs(int64_t batch) const;
  // Both measured, and the replay takes longer than the eager run.
  bool EagerIsFaster(int64_t batch, int64_t bucket) const;
  // The decision for one call of `batch` in `bucket`, counted: EagerIsFaster,
  // except that every kSampleEvery-th call of a bucket it holds faster
  // eagerly replays (and its replay is timed), so the bucket keeps being
  // measured. Once per call.
  bool RunEagerly(int64_t batch, int64_t bucket);

 private:
  struct Bucket {
    int64_t rows = 0;
    int64_t seen = 0;                   // replays counted by WantReplaySample
    int64_t samples = 0;                // AddReplay calls
    double recent[kFirstSamples] = {};  // the last samples, a ring
    double us = 0;                      // their lower median
    int64_t refused = 0;                // calls RunEagerly sent eagerly
    bool probe = false;                 // a call RunEagerly let replay, to be timed
  };
  Bucket& At(int64_t bucket);
  const Bucket* Find(int64_t bucket) const;
  void Refit();

  std::vector<Bucket> buckets_;  // few: the buckets in force
  // Weighted sums for us = a + c * batch: weight, w*b, w*b*b, w*t, w*b*t.
  double w_ = 0, wb_ = 0, wbb_ = 0, wt_ = 0, wbt_ = 0;
  double a_ = 0, c_ = 0;  // the fit, refreshed by AddEager
  int64_t eager_seen_ = 0;
  int64_t eager_samples_ = 0;
  int64_t recent_[4] = {0, 0, 0, 0};  // the last batches timed eagerly
  int recent_next_ = 0;
};

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_PADDING_COST_H_
