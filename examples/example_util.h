// SPDX-License-Identifier: Apache-2.0
// What the examples share: the "no GPU" exit and fail-fast checks
// (example_checks.h), a typed device array, a logger that also keeps its
// lines, and a clock.
#ifndef ENCORE_EXAMPLES_EXAMPLE_UTIL_H_
#define ENCORE_EXAMPLES_EXAMPLE_UTIL_H_

#include <cuda_runtime_api.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_checks.h"

namespace encore::examples {

// n values of T in device memory.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { EX_CUDA(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T))); }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }

  T* get() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  void Upload(const std::vector<T>& v) { EX_CUDA(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  // Waits for `stream`, then copies the whole array back.
  std::vector<T> Download(cudaStream_t stream) const {
    std::vector<T> v(n_);
    EX_CUDA(cudaMemcpyAsync(v.data(), p_, bytes(), cudaMemcpyDeviceToHost, stream));
    EX_CUDA(cudaStreamSynchronize(stream));
    return v;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

// A contiguous float tensor.
inline TensorRef Floats(void* data, Shape shape) { return TensorRef{data, DType::kFloat32, shape, {}}; }

// A logger for ManagerOptions::logger that prints to stderr like encore's own
// and also keeps its lines, so an example can show the events it is about.
class KeptLog {
 public:
  KeptLog()
      : ring_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1024)),
        logger_(std::make_shared<spdlog::logger>(
            "encore", spdlog::sinks_init_list{std::make_shared<spdlog::sinks::stderr_sink_mt>(), ring_})) {
    logger_->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l encore %v");
    logger_->set_level(spdlog::level::info);
  }
  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }
  // Kept lines that contain every one of `parts`.
  std::vector<std::string> Find(std::initializer_list<std::string_view> parts) const {
    std::vector<std::string> out;
    for (std::string line : ring_->last_formatted()) {
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      bool all = true;
      for (std::string_view p : parts) all = all && line.find(p) != std::string::npos;
      if (all) out.push_back(line);
    }
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> ring_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Under tools/gpu_suite.sh --memcheck or --racecheck (ENCORE_SANITIZER set)
// every access of every kernel is checked, so a loop that takes a second
// outlasts the suite's timeout: examples run `quick` rounds instead of
// `full`, the same paths fewer times (their timings mean nothing there).
inline int Rounds(int full, int quick) {
  const char* tool = std::getenv("ENCORE_SANITIZER");
  return tool != nullptr && *tool != '\0' ? quick : full;
}

inline double NowMicros() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A method's report as a small table, the way tools/encore_report.py renders
// Manager::ReportJson() (a file or stdin) for every method.
inline void PrintReport(const Method& m) {
  const MethodReport r = m.Report();
  auto mib = [](size_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  std::printf("method %s\n", r.name.c_str());
  std::printf("  phase         %s\n", std::string(MethodPhaseName(r.phase)).c_str());
  std::printf("  calls         %lld   (warmup %lld, replays %lld, eager %lld, refused %lld)\n",
              static_cast<long long>(r.calls), static_cast<long long>(r.warmup_calls),
              static_cast<long long>(r.replays), static_cast<long long>(r.eager_calls),
              static_cast<long long>(r.refusals));
  std::printf("  graphs        %zu kept, %lld captured, %lld recaptured, %lld failed, %zu nodes in the latest\n",
              r.captured_input_shapes.size(), static_cast<long long>(r.captures),
              static_cast<long long>(r.recaptures), static_cast<long long>(r.capture_failures), r.graph_nodes);
  std::printf("  capture time  %lld us total, %lld us last\n", static_cast<long long>(r.capture_us),
              static_cast<long long>(r.last_capture_us));
  std::printf("  eager         %lld calls; %s%s\n", static_cast<long long>(r.eager_calls),
              r.graphs_off_reason.empty() ? "graphs on" : "graphs off: ", r.graphs_off_reason.c_str());
  std::printf("  memory        reserved %.1f MiB, live %.1f MiB, peak %.1f MiB; graphs hold %.1f MiB\n",
              mib(r.memory.reserved_bytes), mib(r.memory.live_bytes), mib(r.memory.peak_bytes),
              mib(r.graph_memory_bytes));
  if (r.flags.on_new_shape == ShapePolicy::kPad) {
    const double rows = static_cast<double>(r.real_rows + r.padded_rows);
    std::printf("  buckets       %s (%s, %lld changes); rows %lld real, %lld padded (%.1f%%)\n",
                BucketsText(r.buckets).c_str(), r.flags.buckets.empty() ? "learned" : "listed",
                static_cast<long long>(r.bucket_changes), static_cast<long long>(r.real_rows),
                static_cast<long long>(r.padded_rows), rows > 0 ? 100.0 * r.padded_rows / rows : 0.0);
  }
  for (const auto& [reason, calls] : r.eager_by_reason) {
    std::printf("  eager because %s: %lld calls\n", reason.c_str(), static_cast<long long>(calls));
  }
  for (size_t i = 0; i < r.pieces.size(); ++i) {
    const PieceReport& p = r.pieces[i];
    std::string stages;
    for (const std::string& name : p.stages) stages += (stages.empty() ? "" : ",") + name;
    std::printf("  piece %zu       [%s] %s, %zu nodes, %lld replays%s%s\n", i + 1, stages.c_str(),
                p.graphed ? "graph" : "eager", p.graph_nodes, static_cast<long long>(p.replays),
                p.reason.empty() ? "" : "; ", p.reason.c_str());
  }
}

}  // namespace encore::examples

#endif  // ENCORE_EXAMPLES_EXAMPLE_UTIL_H_
