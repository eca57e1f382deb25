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

// Writes `text` to `json_path` and to `file_name` in $OUT and in $RESULTS
// when they are set, each distinct path once, saying so on stdout. Returns
// the paths that could not be written.
std::vector<std::string> WriteResults(const std::string& text, const std::string& json_path,
                                      const std::string& file_name);

}  // namespace encore::bench

#endif  // ENCORE_BENCH_BENCH_UTIL_H_
