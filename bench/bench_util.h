// SPDX-License-Identifier: Apache-2.0
// What the C++ benchmarks share: how a call is timed and where results go.
#ifndef ENCORE_BENCH_BENCH_UTIL_H_
#define ENCORE_BENCH_BENCH_UTIL_H_

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace encore::bench {

double Median(std::vector<double> v);

struct Timing {
  double cpu_us = 0;  // submitting the calls, per call
  double e2e_us = 0;  // submitting them and waiting for the stream, per call
};

// A name and one call of it; the argument is the call's index.
using Variants = std::vector<std::pair<std::string, std::function<void(int)>>>;

// Median Timing of each variant over `repeats` runs of `n` calls on stream
// `s`, after `warmup` calls of each. The variants take turns: repeat r of
// every variant runs before repeat r + 1 of any, so drifting clocks touch
// all alike. `before_repeat`, if set, runs before each timed run with the
// stream idle (ranks line up there).
std::map<std::string, Timing> MeasureInterleaved(cudaStream_t s, int n, int repeats, int warmup,
                                                 const Variants& variants,
                                                 const std::function<void()>& before_repeat = {});

// The same, every repeat's Timing kept (index r: repeat r), for statistics
// over pairs of variants that ran side by side in one repeat.
std::map<std::string, std::vector<Timing>> MeasureInterleavedRepeats(cudaStream_t s, int n, int repeats, int warmup,
                                                                     const Variants& variants,
                                                                     const std::function<void()>& before_repeat = {});

// Each variant's median CPU and median end-to-end time over its repeats.
std::map<std::string, Timing> Medians(const std::map<std::string, std::vector<Timing>>& runs);

// The same as MeasureInterleavedRepeats, the order of the variants rotating
// repeat by repeat (repeat r starts with variant r % size), so no variant
// always runs after the same one.
std::map<std::string, std::vector<Timing>> MeasureRotatingRepeats(cudaStream_t s, int n, int repeats, int warmup,
                                                                  const Variants& variants);

// Median, min and max of a metric over the repeats.
struct Stats {
  double median = 0, min = 0, max = 0;
  int n = 0;
};
Stats StatsOf(std::vector<double> v);

// The result file every benchmark writes, schema "encore-bench/1" (the one
// tools/perf_table.py reads to write docs/performance.md): the command, the
// UTC date, the device, the repeats, per metric its median, min and max, the
// result checks (a run with a failed check exits 1 and shows no number),
// and free-form `info` (a JSON object's text).
class ResultFile {
 public:
  ResultFile(std::string benchmark, std::string command, int rounds);
  void Metric(const std::string& key, const Stats& s, const std::string& unit);
  // Prints the check as it is made.
  void Check(const std::string& name, bool ok, const std::string& detail);
  bool ok() const { return !checks_.empty() && failed_ == 0; }
  // The JSON text, `info` inserted as the value of "info".
  std::string Json(const std::string& info) const;

 private:
  std::string benchmark_, command_;
  int rounds_;
  std::vector<std::string> metrics_, checks_;
  int failed_ = 0;
};

// `text` as a JSON string literal.
std::string JsonQuote(const std::string& text);

// Writes `text` to `json_path` and to `file_name` in $OUT and in $RESULTS
// when they are set, each distinct path once, saying so on stdout. Returns
// the paths that could not be written.
std::vector<std::string> WriteResults(const std::string& text, const std::string& json_path,
                                      const std::string& file_name);

}  // namespace encore::bench

#endif  // ENCORE_BENCH_BENCH_UTIL_H_
