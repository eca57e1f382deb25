// SPDX-License-Identifier: Apache-2.0
#include "encore/bench/bench_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "encore/examples/example_util.h"

namespace ex = encore::examples;

namespace encore::bench {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

namespace {

std::map<std::string, std::vector<Timing>> Measure(cudaStream_t s, int n, int repeats, int warmup,
                                                   const Variants& variants,
                                                   const std::function<void()>& before_repeat, bool rotate) {
  std::map<std::string, std::vector<Timing>> out;
  for (const auto& [name, call] : variants) {
    for (int i = 0; i < warmup; ++i) call(i);
  }
  EX_CUDA(cudaStreamSynchronize(s));
  const size_t count = variants.size();
  for (int r = 0; r < repeats; ++r) {
    for (size_t v = 0; v < count; ++v) {
      const auto& [name, call] = variants[rotate ? (v + r) % count : v];
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

}  // namespace

std::map<std::string, std::vector<Timing>> MeasureInterleavedRepeats(cudaStream_t s, int n, int repeats, int warmup,
                                                                     const Variants& variants,
                                                                     const std::function<void()>& before_repeat) {
  return Measure(s, n, repeats, warmup, variants, before_repeat, /*rotate=*/false);
}

std::map<std::string, std::vector<Timing>> MeasureRotatingRepeats(cudaStream_t s, int n, int repeats, int warmup,
                                                                  const Variants& variants) {
  return Measure(s, n, repeats, warmup, variants, {}, /*rotate=*/true);
}

Stats StatsOf(std::vector<double> v) {
  Stats st;
  if (v.empty()) return st;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  st.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  st.min = v.front();
  st.max = v.back();
  st.n = static_cast<int>(n);
  return st;
}

std::string JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

ResultFile::ResultFile(std::string benchmark, std::string command, int rounds)
    : benchmark_(std::move(benchmark)), command_(std::move(command)), rounds_(rounds) {}

void ResultFile::Metric(const std::string& key, const Stats& s, const std::string& unit) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "{\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"n\": %d, \"unit\": ", s.median,
                s.min, s.max, s.n);
  metrics_.push_back(JsonQuote(key) + ": " + buf + JsonQuote(unit) + "}");
}

void ResultFile::Check(const std::string& name, bool ok, const std::string& detail) {
  std::printf("%s: %s%s\n", ok ? "CHECK" : "CHECK FAILED", name.c_str(), detail.empty() ? "" : (" (" + detail + ")").c_str());
  checks_.push_back("{\"name\": " + JsonQuote(name) + ", \"ok\": " + (ok ? "true" : "false") +
                    ", \"detail\": " + JsonQuote(detail) + "}");
  if (!ok) ++failed_;
}

std::string ResultFile::Json(const std::string& info) const {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  cudaDeviceProp prop{};
  int dev = 0;
  const bool have = cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess;
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ",\n  " : "\n  ") + v[i];
    return out;
  };
  return std::string("{\"schema\": \"encore-bench/1\", \"benchmark\": ") + JsonQuote(benchmark_) +
         ", \"command\": " + JsonQuote(command_) + ", \"date\": " + JsonQuote(date) +
         ", \"device\": " + (have ? JsonQuote(prop.name) : "null") + ", \"rounds\": " + std::to_string(rounds_) +
         ", \"ok\": " + (ok() ? "true" : "false") + ",\n\"metrics\": {" + join(metrics_) + "},\n\"checks\": [" +
         join(checks_) + "],\n\"info\": " + (info.empty() ? "{}" : info) + "}\n";
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
