// SPDX-License-Identifier: Apache-2.0
// serving: a small model served with batch sizes that change on every call.
//
// The model is 32 linear layers (64 -> 64, ReLU between them; 8 under a
// sanitizer): 32 kernels per call, each row of the output depending only on
// its row of the input, so padding a batch with zero rows does not change
// the real rows. Batch sizes are drawn from a Zipf distribution over 1..256
// (P(b) ~ 1/b: many small batches, a long tail of large ones), as an
// inference server sees.
// The same trace is served four ways:
//
//   eager      graphs=off
//   recapture  on_new_shape=recapture, max_graphs=6: a graph per batch size,
//              the least recently used updated in place
//   pad_pow2   on_new_shape=pad, buckets=1|2|4|...|256, precaptured
//   learned    on_new_shape=pad, no buckets listed, max_graphs=6: encore
//              learns six buckets from the batch sizes it sees
//
// and a fixed-shape replay (one batch size, nothing changing) gives the CPU
// cost a replay has at best. Every output of every call is compared bit for
// bit with the eager run's, and rows past each call's batch must be left
// untouched. The program prints, per way: graphs kept, captures, eager
// calls, padded-work fraction, CPU and end-to-end microseconds per call; then
// the targets for learned buckets and whether each is met, and the
// time Precapture takes for 8 buckets.
//
//   bazel run //examples:serving [-- --calls N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"
#include "encore/policy/internal/learned_buckets.h"

namespace ex = encore::examples;
using encore::Method;
using encore::MethodFlags;
using encore::MethodReport;
using encore::ShapePolicy;
using encore::TensorRef;
using ex::DeviceArray;

constexpr int kWidth = 64, kMaxBatch = 256, kBuffers = 4, kMaxGraphs = 6;
// Under a sanitizer every capture instantiates its graphs under the tool
// too (over a second for the quickstart's four nodes under racecheck), and
// the ways capture about thirty graphs: eight layers take the same paths.
const int kLayers = ex::Rounds(32, 8);
constexpr uint32_t kUntouched = 0xFFFFFFFFu;  // a NaN no kernel writes

struct Model {
  std::vector<DeviceArray<float>> w, b;
  Model() {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-0.3f, 0.3f);
    for (int l = 0; l < kLayers; ++l) {
      std::vector<float> wv(kWidth * kWidth), bv(kWidth);
      for (float& x : wv) x = u(rng);
      for (float& x : bv) x = u(rng) * 0.1f;
      w.emplace_back(wv.size());
      b.emplace_back(bv.size());
      w.back().Upload(wv);
      b.back().Upload(bv);
    }
  }
  std::vector<encore::Constant> Constants() const {
    std::vector<encore::Constant> c;
    for (int l = 0; l < kLayers; ++l) {
      c.push_back({"w" + std::to_string(l), w[l].get(), w[l].bytes()});
      c.push_back({"b" + std::to_string(l), b[l].get(), b[l].bytes()});
    }
    return c;
  }
  // The method body: 32 launches on the call's rows, through two scratch
  // buffers from Call::Allocate.
  encore::Status Forward(encore::Call& c) const {
    const int m = static_cast<int>(c.input(0).shape[0]);
    const size_t bytes = static_cast<size_t>(m) * kWidth * sizeof(float);
    auto h0 = c.Allocate(bytes);
    if (!h0.ok()) return h0.status();
    auto h1 = c.Allocate(bytes);
    if (!h1.ok()) return h1.status();
    const float* in = static_cast<const float*>(c.input(0).data);
    for (int l = 0; l < kLayers; ++l) {
      const bool last = l == kLayers - 1;
      float* out = last ? static_cast<float*>(c.output(0).data) : static_cast<float*>(l % 2 ? *h1 : *h0);
      cudaError_t e = ex::LaunchLinear(in, w[l].get(), b[l].get(), out, m, kWidth, kWidth, !last, c.stream());
      if (e != cudaSuccess) return encore::CudaStatus(e, "LaunchLinear");
      in = out;
    }
    return encore::OkStatus();
  }
};

struct Way {
  std::string name;
  MethodFlags flags;
};

struct Outcome {
  MethodReport report;
  double cpu_us = 0, e2e_us = 0;         // per call, all calls
  double cpu_us_steady = 0;              // per call, after the first 1,000
  int64_t eager_after_first_1000 = 0;
  size_t most_graphs_kept = 0;           // sampled every 100 calls
  int64_t mismatches = 0;
  std::string first_mismatch;
};

// Eager calls but those that ran eagerly because that was faster than
// their padded replay (reason padding, decided from what encore measured).
int64_t EagerForWantOfAGraph(const MethodReport& r) {
  auto it = r.eager_by_reason.find(encore::eager_reason::kPadding);
  return r.eager_calls - (it == r.eager_by_reason.end() ? 0 : it->second);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

class Server {
 public:
  Server(const Model& model, const std::vector<int64_t>& trace, cudaStream_t stream)
      : model_(model), trace_(trace), stream_(stream) {
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int i = 0; i < kBuffers; ++i) {
      std::vector<float> v(kMaxBatch * kWidth);
      for (float& x : v) x = u(rng);
      inputs_.emplace_back(v.size());
      inputs_.back().Upload(v);
      outputs_.emplace_back(v.size());
    }
    manager_ = EX_OK(encore::Manager::Create(Options()));
  }

  Method* Register(const Way& way) {
    encore::MethodSpec spec;
    spec.name = way.name;
    spec.constants = model_.Constants();
    spec.flags = way.flags;
    spec.fn = [this](encore::Call& c) { return model_.Forward(c); };
    return EX_OK(manager_->Register(std::move(spec)));
  }

  // Serves the trace: each call timed alone (its Run, then its Run through
  // to the end of its GPU work), then checked against `reference` (the
  // eager way's outputs, recorded when `reference` is empty).
  Outcome Serve(Method* m, std::vector<std::vector<float>>* reference) {
    Outcome o;
    const bool record = reference->empty();
    std::vector<double> cpu, e2e;
    std::vector<uint32_t> got(kMaxBatch * kWidth);
    for (int i = 0; i < kBuffers; ++i) EX_CUDA(cudaMemset(outputs_[i].get(), 0xFF, outputs_[i].bytes()));
    EX_CUDA(cudaDeviceSynchronize());
    for (size_t i = 0; i < trace_.size(); ++i) {
      const int64_t b = trace_[i];
      const int slot = static_cast<int>(i % kBuffers);
      const auto [call_cpu, call_e2e] = TimedCall(m, slot, b);
      cpu.push_back(call_cpu);
      e2e.push_back(call_e2e);
      if (i + 1 == 1000) o.eager_after_first_1000 = -EagerForWantOfAGraph(m->Report());
      if (i % 100 == 0) o.most_graphs_kept = std::max(o.most_graphs_kept, m->Report().captured_input_shapes.size());
      Check(i, b, slot, record, reference, &got, &o);
    }
    o.report = m->Report();
    o.most_graphs_kept = std::max(o.most_graphs_kept, o.report.captured_input_shapes.size());
    o.eager_after_first_1000 += EagerForWantOfAGraph(o.report);
    double sum_cpu = 0, sum_e2e = 0, sum_steady = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      sum_cpu += cpu[i];
      sum_e2e += e2e[i];
      if (i >= 1000) sum_steady += cpu[i];
    }
    o.cpu_us = sum_cpu / cpu.size();
    o.e2e_us = sum_e2e / e2e.size();
    o.cpu_us_steady = cpu.size() > 1000 ? sum_steady / (cpu.size() - 1000) : o.cpu_us;
    return o;
  }

  // CPU and end-to-end microseconds of replays at one batch size.
  std::pair<double, double> FixedShape(Method* m, int64_t b, int calls) {
    double cpu = 0, e2e = 0;
    for (int i = 0; i < calls + 10; ++i) {
      const auto [call_cpu, call_e2e] = TimedCall(m, i % kBuffers, b);
      if (i >= 10) cpu += call_cpu, e2e += call_e2e;  // the first 10 warm up and capture
    }
    return {cpu / calls, e2e / calls};
  }

  // One call on buffer slot `slot` with batch `b`: Run's own microseconds,
  // and through the end of its GPU work.
  std::pair<double, double> TimedCall(Method* m, int slot, int64_t b) {
    TensorRef in = ex::Floats(inputs_[slot].get(), {b, kWidth});
    TensorRef out = ex::Floats(outputs_[slot].get(), {b, kWidth});
    const double t0 = ex::NowMicros();
    EX_OK(m->Run({&in, 1}, {&out, 1}, stream_));
    const double t1 = ex::NowMicros();
    EX_CUDA(cudaStreamSynchronize(stream_));
    const double t2 = ex::NowMicros();
    return {t1 - t0, t2 - t0};
  }

  DeviceArray<float>& input(int i) { return inputs_[i]; }
  DeviceArray<float>& output(int i) { return outputs_[i]; }
  ex::KeptLog& log() { return log_; }
  encore::Manager& manager() { return *manager_; }

 private:
  encore::ManagerOptions Options() {
    encore::ManagerOptions o;
    o.logger = log_.logger();
    return o;
  }

  // Rows [0, b) must equal the eager run's bits; rows after them must hold
  // the untouched pattern. The slot is then reset for its next call.
  void Check(size_t i, int64_t b, int slot, bool record, std::vector<std::vector<float>>* reference,
             std::vector<uint32_t>* got, Outcome* o) {
    DeviceArray<float>& out = outputs_[slot];
    EX_CUDA(cudaMemcpy(got->data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost));
    const size_t n = static_cast<size_t>(b) * kWidth;
    if (record) {
      reference->emplace_back(n);
      std::memcpy(reference->back().data(), got->data(), n * sizeof(float));
    }
    const std::vector<float>& want = (*reference)[i];
    bool same = std::memcmp(got->data(), want.data(), n * sizeof(float)) == 0;
    size_t bad = n;
    for (size_t k = n; k < got->size(); ++k) {
      if ((*got)[k] != kUntouched) {
        same = false;
        bad = k;
        break;
      }
    }
    if (!same) {
      if (o->mismatches++ == 0) {
        o->first_mismatch = "call " + std::to_string(i + 1) + " (batch " + std::to_string(b) + ")" +
                            (bad < got->size() ? ": row " + std::to_string(bad / kWidth) + " past the batch written"
                                               : ": rows differ from eager");
      }
    }
    EX_CUDA(cudaMemset(out.get(), 0xFF, out.bytes()));
  }

  const Model& model_;
  const std::vector<int64_t>& trace_;
  cudaStream_t stream_;
  ex::KeptLog log_;
  std::unique_ptr<encore::Manager> manager_;
  std::vector<DeviceArray<float>> inputs_, outputs_;
};

std::vector<int64_t> ZipfTrace(int calls) {
  std::vector<double> weights(kMaxBatch);
  for (int b = 1; b <= kMaxBatch; ++b) weights[b - 1] = 1.0 / b;
  std::discrete_distribution<int> zipf(weights.begin(), weights.end());
  std::mt19937 rng(2026);
  std::vector<int64_t> trace(calls);
  for (int64_t& b : trace) b = zipf(rng) + 1;
  return trace;
}

void Target(const char* what, bool met, const std::string& value) {
  std::printf("TARGET %-62s %-26s %s\n", what, value.c_str(), met ? "met" : "MISSED");
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

int main(int argc, char** argv) {
  if (int rc = ex::RequireGpu("serving")) return rc;
  // Under a sanitizer a short trace: 40 calls per way, past the 32 the
  // learned buckets observe before their first choice, so every way still
  // captures, pads and replays, and every output is still checked (with 8,
  // the learned way ran eagerly throughout).
  int calls = ex::Rounds(20000, 40);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) calls = std::max(1001, std::atoi(argv[++i]));
  }
  cudaStream_t stream;
  EX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Model model;
  const std::vector<int64_t> trace = ZipfTrace(calls);
  Server server(model, trace, stream);

  MethodFlags eager;
  eager.graphs = false;
  MethodFlags recapture;
  recapture.on_new_shape = ShapePolicy::kRecapture;
  recapture.max_graphs = kMaxGraphs;
  MethodFlags pow2;
  pow2.on_new_shape = ShapePolicy::kPad;
  for (int64_t b = 1; b <= kMaxBatch; b *= 2) pow2.buckets.push_back(b);
  MethodFlags learned;
  learned.on_new_shape = ShapePolicy::kPad;
  learned.max_graphs = kMaxGraphs;
  const std::vector<Way> ways = {{"eager", eager}, {"recapture", recapture}, {"pad_pow2", pow2}, {"learned", learned}};

  std::printf("serving: %d calls, batch sizes Zipf over 1..%d (mean %.1f), a %d-kernel model\n", calls, kMaxBatch,
              [&] {
                double s = 0;
                for (int64_t b : trace) s += b;
                return s / trace.size();
              }(),
              kLayers);
  std::vector<std::vector<float>> reference;
  std::map<std::string, Outcome> out;
  for (const Way& way : ways) {
    Method* m = server.Register(way);
    if (way.name == "pad_pow2") {
      // A server captures its buckets before the first request.
      TensorRef in = ex::Floats(server.input(0).get(), {kMaxBatch, kWidth});
      TensorRef o = ex::Floats(server.output(0).get(), {kMaxBatch, kWidth});
      EX_OK(m->Precapture({&in, 1}, {&o, 1}, stream));
      EX_CUDA(cudaStreamSynchronize(stream));
    }
    out[way.name] = server.Serve(m, &reference);
  }

  // The fixed-shape replay the learned buckets' CPU cost is held against.
  MethodFlags fixed_flags;
  Method* fixed = server.Register({"fixed", fixed_flags});
  auto [fixed_cpu, fixed_e2e] = server.FixedShape(fixed, 64, ex::Rounds(5000, 4));

  std::printf("\n%-10s %7s %9s %7s %8s %11s %9s %9s %9s %s\n", "way", "graphs", "captures", "eager", "padded",
              "graph MiB", "CPU us", "e2e us", "CPU us*", "outputs");
  for (const Way& way : ways) {
    const Outcome& o = out[way.name];
    const MethodReport& r = o.report;
    const double rows = static_cast<double>(r.real_rows + r.padded_rows);
    std::printf("%-10s %7zu %9lld %7lld %7.1f%% %11.2f %9.2f %9.2f %9.2f %s\n", way.name.c_str(),
                r.captured_input_shapes.size(), static_cast<long long>(r.captures + r.recaptures),
                static_cast<long long>(r.eager_calls), rows > 0 ? 100.0 * r.padded_rows / rows : 0.0,
                r.graph_memory_bytes / (1024.0 * 1024.0), o.cpu_us, o.e2e_us, o.cpu_us_steady,
                o.mismatches == 0 ? "all equal to eager" : ("MISMATCH: " + o.first_mismatch).c_str());
  }
  std::printf("%-10s %7d %9s %7s %8s %11s %9.2f %9.2f %9s (batch 64 every call)\n", "fixed", 1, "1", "0", "-", "-",
              fixed_cpu, fixed_e2e, "-");
  std::printf("(padded: zero rows added / rows computed; CPU us: Run's own time per call; e2e us: Run through the end\n"
              " of its GPU work, one call at a time; CPU us*: after the first 1,000 calls)\n");
  const MethodReport& lr = out["learned"].report;
  std::printf("learned buckets: %s (%lld changes)\n", encore::BucketsText(lr.buckets).c_str(),
              static_cast<long long>(lr.bucket_changes));

  // The best six buckets for the whole trace, chosen offline.
  std::map<int64_t, int64_t> counts;
  for (int64_t b : trace) ++counts[b];
  std::vector<encore::BatchCount> hist;
  for (const auto& [b, n] : counts) hist.push_back({b, n});
  const encore::BucketChoice best = encore::ChooseBuckets(hist, kMaxGraphs, hist.back().batch);
  const int64_t final_choice = encore::CostOf(hist, lr.buckets).padded_rows;
  std::printf("offline best 6 buckets: %s, %lld padded rows; the learned final choice on the same trace: %lld\n",
              encore::BucketsText(best.buckets).c_str(), static_cast<long long>(best.padded_rows),
              static_cast<long long>(final_choice));

  const Outcome& l = out["learned"];
  std::printf("\n");
  Target("learned buckets keep <= 6 graphs", l.most_graphs_kept <= kMaxGraphs,
         std::to_string(l.most_graphs_kept) + " at most");
  Target("no call after the first 1,000 runs eagerly for want of a graph", l.eager_after_first_1000 == 0,
         std::to_string(l.eager_after_first_1000) + " eager after (and " +
             std::to_string(lr.eager_calls - EagerForWantOfAGraph(lr)) + " in all because eager was faster)");
  const double ratio = static_cast<double>(lr.padded_rows) / std::max<int64_t>(1, best.padded_rows);
  Target("padded rows <= 1.25x the offline best 6 buckets'", ratio <= 1.25,
         std::to_string(lr.padded_rows) + " = " + Fmt("%.3fx", ratio));
  bool all_equal = true;
  for (const auto& [name, o] : out) all_equal = all_equal && o.mismatches == 0;
  Target("every output equal to eager's (all ways)", all_equal, all_equal ? "yes" : "no");
  const double cpu_ratio = l.cpu_us_steady / fixed_cpu;
  Target("CPU per call <= 1.3x a replay at a fixed shape", cpu_ratio <= 1.3,
         Fmt("%.2f us", l.cpu_us_steady) + Fmt(" = %.2fx", cpu_ratio));

  // Precapture of 8 buckets of the 32-kernel method, before any request.
  MethodFlags pre;
  pre.on_new_shape = ShapePolicy::kPad;
  for (int64_t b = 1; b <= 128; b *= 2) pre.buckets.push_back(b);
  Method* pm = server.Register({"precaptured", pre});
  TensorRef in = ex::Floats(server.input(1).get(), {128, kWidth});
  TensorRef o = ex::Floats(server.output(1).get(), {128, kWidth});
  const double t0 = ex::NowMicros();
  EX_OK(pm->Precapture({&in, 1}, {&o, 1}, stream));
  EX_CUDA(cudaStreamSynchronize(stream));
  const double precapture_ms = (ex::NowMicros() - t0) / 1000.0;
  for (const std::string& line : server.log().Find({"event=precapture", "method=precaptured"})) {
    std::printf("  %s\n", line.c_str());
  }
  TensorRef in3 = ex::Floats(server.input(1).get(), {100, kWidth});
  TensorRef o3 = ex::Floats(server.output(1).get(), {100, kWidth});
  EX_OK(pm->Run({&in3, 1}, {&o3, 1}, stream));
  EX_CUDA(cudaStreamSynchronize(stream));
  const MethodReport pr = pm->Report();
  Target("Precapture of 8 buckets of a 32-kernel method well under 1 s", precapture_ms < 500,
         Fmt("%.1f ms", precapture_ms));
  Target("the first Run after Precapture replays", pr.replays == 1 && pr.captures == 8,
         std::to_string(pr.replays) + " replay, " + std::to_string(pr.captures) + " graphs");

  std::printf("\n");
  ex::PrintReport(*server.manager().Find("learned"));
  EX_CUDA(cudaStreamDestroy(stream));
  if (!all_equal) {
    std::fprintf(stderr, "FAILED: an output differs from eager's\n");
    return 1;
  }
  return 0;
}
