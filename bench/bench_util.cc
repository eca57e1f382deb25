// SPDX-License-Identifier: Apache-2.0
#include "encore/bench/bench_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "encore/examples/example_util.h"

namespace ex = encore::examples;

namespace encore::bench {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::map<std::string, std::vector<Timing>> MeasureInterleavedRepeats(cudaStream_t s, int n, int repeats, int warmup,
                                                                     const Variants& variants,
                                                                     const std::function<void()>& before_repeat) {
  std::map<std::string, std::vector<Timing>> out;
  for (const auto& [name, call] : variants) {
    for (int i = 0; i < warmup; ++i) call(i);
  }
  EX_CUDA(cudaStreamSynchronize(s));
  for (int r = 0; r < repeats; ++r) {
    for (const auto& [name, call] : variants) {
      EX_CUDA(cudaStreamSynchronize(s));
      if (before_repeat) before_repeat();
      double t0 = ex::NowMicros();
      for (int i = 0; i < n; ++i) call(i);
      double t1 = ex::NowMicros();
      EX_CUDA(cudaStreamSynchronize(s));
      double t2 = ex::NowMicros();
      out[name].push_back({(t1 - t0) / n, (t2 - t0) / n});
    }
  }
  return out;
}

std::map<std::string, Timing> Medians(const std::map<std::string, std::vector<Timing>>& runs) {
  std::map<std::string, Timing> out;
  for (const auto& [name, rs] : runs) {
    std::vector<double> cpu, e2e;
    for (const Timing& t : rs) {
      cpu.push_back(t.cpu_us);
      e2e.push_back(t.e2e_us);
    }
    out[name] = {Median(cpu), Median(e2e)};
  }
  return out;
}

std::map<std::string, Timing> MeasureInterleaved(cudaStream_t s, int n, int repeats, int warmup,
                                                 const Variants& variants,
                                                 const std::function<void()>& before_repeat) {
  return Medians(MeasureInterleavedRepeats(s, n, repeats, warmup, variants, before_repeat));
}

std::vector<std::string> WriteResults(const std::string& text, const std::string& json_path,
                                      const std::string& file_name) {
  std::vector<std::string> paths = {json_path};
  for (const char* env : {"OUT", "RESULTS"}) {
    const char* dir = std::getenv(env);
    if (dir && *dir) {
      std::string p = std::string(dir) + "/" + file_name;
      if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
    }
  }
  std::vector<std::string> failed;
  for (const std::string& p : paths) {
    std::ofstream f(p);
    f << text;
    if (f.good()) {
      std::printf("wrote %s\n", p.c_str());
    } else {
      failed.push_back(p);
    }
  }
  return failed;
}

}  // namespace encore::bench
