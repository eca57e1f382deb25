// SPDX-License-Identifier: Apache-2.0
// encore_bench: what a call costs, encore against raw CUDA graphs.
//
// A method of K tiny kernels on 256 floats (out = in + 1, then K-1 times
// out += 1), with one input and one output whose addresses change every call
// (4 buffers each, rotated), for K in {1, 8, 32, 128, 512}:
//   eager        the K kernels launched on the caller's buffers
//   raw          a CUDA graph over fixed buffers, cudaGraphLaunch only (the floor)
//   raw+copies   the same graph with the input and output staged by hand:
//                cudaMemcpyAsync D2D in, cudaGraphLaunch, cudaMemcpyAsync D2D out
//   encore       Method::Run (3 warmup calls, a capture, then replays)
// CPU us/call is the time to submit N calls (no sync) over N; end-to-end
// us/call is submit N calls + sync over N; each is the median of 7 repeats.
// Then the cost of a recapture (raw CUDA, K = 8 and 128), and encore's memory
// after 1 and after 100k replays.
//
//   bench/encore_bench [--json PATH] [--quick]
// writes a table to stdout and JSON to PATH (default ./bench_results.json),
// and a copy to $OUT/bench_results.json and $RESULTS/bench_results.json when
// those are set (tools/gpu_suite.sh bench sets RESULTS). Exits 77 without a
// GPU, 1 if a result is wrong or memory grew, 0 otherwise (targets missed are
// reported, not failures).
#include <cuda_runtime_api.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/encore.h"
#include "encore/examples/example_util.h"
#include "encore/tests/test_kernels.h"

namespace ex = encore::examples;
using encore::bench::Median;
using encore::bench::MeasureInterleaved;
using encore::bench::Timing;
using encore::testing::LaunchAffine;
using encore::testing::LaunchIncrementK;

namespace {

constexpr int kElems = 256;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kBuffers = 4;
const int kKs[] = {1, 8, 32, 128, 512};

struct Options {
  std::string json = "bench_results.json";
  bool quick = false;  // a smoke run: few calls, few repeats
};

int g_errors = 0;
void Error(const std::string& what) {
  std::fprintf(stderr, "encore_bench: ERROR: %s\n", what.c_str());
  ++g_errors;
}

// The work of one call: out = in + 1, then K-1 kernels of out += 1.
cudaError_t LaunchWork(const float* in, float* out, int k, cudaStream_t s) {
  cudaError_t e = LaunchAffine(in, out, 1.0f, 1.0f, kElems, s);
  if (e == cudaSuccess && k > 1) e = LaunchIncrementK(out, kElems, k - 1, s);
  return e;
}

// Every element of `p` should be `want`.
void ExpectAll(const float* p, float want, cudaStream_t s, const std::string& what) {
  std::vector<float> h(kElems);
  EX_CUDA(cudaMemcpyAsync(h.data(), p, kBytes, cudaMemcpyDeviceToHost, s));
  EX_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < kElems; ++i) {
    if (h[i] != want) {
      Error(what + ": element " + std::to_string(i) + " is " + std::to_string(h[i]) + ", expected " +
            std::to_string(want));
      return;
    }
  }
}

// A raw CUDA graph of the work over fixed buffers.
struct RawGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~RawGraph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

cudaGraph_t CaptureWork(const float* in, float* out, int k, cudaStream_t s) {
  cudaGraph_t g = nullptr;
  EX_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EX_CUDA(LaunchWork(in, out, k, s));
  EX_CUDA(cudaStreamEndCapture(s, &g));
  return g;
}

std::string Num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

// Enough JSON string escaping for device names and the rules below.
std::string Escape(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string TimingJson(const Timing& t) {
  return "{\"cpu_us\":" + Num(t.cpu_us) + ",\"e2e_us\":" + Num(t.e2e_us) + "}";
}

std::shared_ptr<spdlog::logger> QuietLogger() {
  auto logger = std::make_shared<spdlog::logger>("encore", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_level(spdlog::level::warn);
  return logger;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      opt.json = argv[++i];
    } else if (a.rfind("--json=", 0) == 0) {
      opt.json = a.substr(7);
    } else if (a == "--quick") {
      opt.quick = true;
    } else {
      std::fprintf(stderr, "usage: encore_bench [--json PATH] [--quick]\n");
      return 2;
    }
  }
  if (int rc = ex::RequireGpu("encore_bench")) return rc;

  cudaDeviceProp prop{};
  int driver = 0, runtime = 0;
  EX_CUDA(cudaGetDeviceProperties(&prop, 0));
  EX_CUDA(cudaDriverGetVersion(&driver));
  EX_CUDA(cudaRuntimeGetVersion(&runtime));
  std::printf("encore_bench on %s (driver %d, runtime %d)%s\n", prop.name, driver, runtime,
              opt.quick ? " [--quick: few calls, numbers are rough]" : "");

  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Input j holds 10 * (j + 1); outputs are written by every variant.
  std::vector<float*> in(kBuffers), out(kBuffers);
  for (int j = 0; j < kBuffers; ++j) {
    EX_CUDA(cudaMalloc(reinterpret_cast<void**>(&in[j]), kBytes));
    EX_CUDA(cudaMalloc(reinterpret_cast<void**>(&out[j]), kBytes));
    std::vector<float> h(kElems, 10.0f * (j + 1));
    EX_CUDA(cudaMemcpy(in[j], h.data(), kBytes, cudaMemcpyHostToDevice));
  }
  float *static_in, *static_out;
  EX_CUDA(cudaMalloc(reinterpret_cast<void**>(&static_in), kBytes));
  EX_CUDA(cudaMalloc(reinterpret_cast<void**>(&static_out), kBytes));
  EX_CUDA(cudaMemcpy(static_in, in[0], kBytes, cudaMemcpyDeviceToDevice));

  encore::ManagerOptions mo;
  mo.logger = QuietLogger();
  auto manager = ex::CheckOk(encore::Manager::Create(mo), "Manager::Create");
  std::vector<encore::TensorRef> in_refs, out_refs;
  for (int j = 0; j < kBuffers; ++j) {
    in_refs.push_back(ex::Floats(in[j], {kElems}));
    out_refs.push_back(ex::Floats(out[j], {kElems}));
  }
  auto register_k = [&](const std::string& name, int k, encore::MethodFlags flags) {
    encore::MethodSpec spec;
    spec.name = name;
    spec.fn = [k](encore::Call& call) {
      return encore::CudaStatus(LaunchWork(static_cast<const float*>(call.input(0).data),
                                     static_cast<float*>(call.output(0).data), k, call.stream()),
                          "work");
    };
    spec.constants = std::vector<encore::Constant>{};
    spec.flags = flags;
    return ex::CheckOk(manager->Register(std::move(spec)), "Register");
  };

  // ------------------------------------------------------------ per call --
  const int repeats = opt.quick ? 3 : 7;
  std::map<int, std::map<std::string, Timing>> per_call;
  std::map<int, int> calls_of;
  std::printf("\nper call, median of %d repeats; us = microseconds\n", repeats);
  std::map<int, std::string> bindings;
  std::printf("%5s %6s | %-19s | %-19s | %-19s | %-19s | %-19s\n", "K", "N", "eager", "raw graph",
              "raw graph + copies", "encore (auto)", "encore (staged)");
  std::printf("%5s %6s | %8s %10s | %8s %10s | %8s %10s | %8s %10s | %8s %10s\n", "", "", "CPU", "end2end", "CPU",
              "end2end", "CPU", "end2end", "CPU", "end2end", "CPU", "end2end");
  for (int k : kKs) {
    const int n = opt.quick ? 200 : (k >= 512 ? 500 : 2000);
    calls_of[k] = n;
    auto& row = per_call[k];
    const float want0 = 10.0f + k;  // input 0 holds 10

    RawGraph raw;
    raw.graph = CaptureWork(static_in, static_out, k, s);
    EX_CUDA(cudaGraphInstantiate(&raw.exec, raw.graph, 0));
    encore::Method* m = register_k("incr_k" + std::to_string(k), k, encore::MethodFlags{});
    encore::MethodFlags staged_flags;
    staged_flags.binding = encore::Binding::kStaged;
    encore::Method* ms = register_k("incr_k" + std::to_string(k) + "_staged", k, staged_flags);

    // The four variants take turns, one repeat each, so a drift of clocks or
    // load over the run falls on all of them alike.
    std::vector<std::pair<std::string, std::function<void(int)>>> variants = {
        {"eager", [&](int i) { EX_CUDA(LaunchWork(in[i % kBuffers], out[i % kBuffers], k, s)); }},
        {"raw_graph", [&](int) { EX_CUDA(cudaGraphLaunch(raw.exec, s)); }},
        {"raw_graph_copies",
         [&](int i) {
           EX_CUDA(cudaMemcpyAsync(static_in, in[i % kBuffers], kBytes, cudaMemcpyDeviceToDevice, s));
           EX_CUDA(cudaGraphLaunch(raw.exec, s));
           EX_CUDA(cudaMemcpyAsync(out[i % kBuffers], static_out, kBytes, cudaMemcpyDeviceToDevice, s));
         }},
        {"encore",
         [&](int i) {
           encore::Status st = m->Run({&in_refs[i % kBuffers], 1}, {&out_refs[i % kBuffers], 1}, s);
           if (!st.ok()) ex::Fail("Method::Run: " + st.ToString());
         }},
        {"encore_staged",
         [&](int i) {
           encore::Status st = ms->Run({&in_refs[i % kBuffers], 1}, {&out_refs[i % kBuffers], 1}, s);
           if (!st.ok()) ex::Fail("Method::Run (staged): " + st.ToString());
         }},
    };
    for (auto& [name, timing] : MeasureInterleaved(s, n, repeats, 20, variants)) row[name] = timing;

    EX_CUDA(LaunchWork(in[0], out[0], k, s));
    ExpectAll(out[0], want0, s, "eager K=" + std::to_string(k));
    EX_CUDA(cudaMemcpyAsync(static_in, in[0], kBytes, cudaMemcpyDeviceToDevice, s));  // leave input 0 there
    EX_CUDA(cudaGraphLaunch(raw.exec, s));
    ExpectAll(static_out, want0, s, "raw graph K=" + std::to_string(k));
    ex::CheckOk(m->Run({&in_refs[1], 1}, {&out_refs[1], 1}, s), "Method::Run");
    ExpectAll(out[1], 20.0f + k, s, "encore K=" + std::to_string(k));
    ex::CheckOk(ms->Run({&in_refs[2], 1}, {&out_refs[2], 1}, s), "Method::Run (staged)");
    ExpectAll(out[2], 30.0f + k, s, "encore staged K=" + std::to_string(k));
    encore::MethodReport r = m->Report();
    for (const encore::MethodReport& rr : {r, ms->Report()}) {
      if (rr.captures != 1 || rr.capture_failures != 0 || rr.replays < n) {
        Error("encore K=" + std::to_string(k) + " did not replay a graph: " + rr.ToJson());
      }
    }
    bindings[k] = std::string(encore::BindingName(r.binding)) + " (" + r.binding_reason + ")";
    ex::CheckOk(m->Release(), "Release");  // give its memory back
    ex::CheckOk(ms->Release(), "Release");

    std::printf("%5d %6d | %8.2f %10.2f | %8.2f %10.2f | %8.2f %10.2f | %8.2f %10.2f | %8.2f %10.2f\n", k, n,
                row["eager"].cpu_us, row["eager"].e2e_us, row["raw_graph"].cpu_us, row["raw_graph"].e2e_us,
                row["raw_graph_copies"].cpu_us, row["raw_graph_copies"].e2e_us, row["encore"].cpu_us,
                row["encore"].e2e_us, row["encore_staged"].cpu_us, row["encore_staged"].e2e_us);
  }
  for (const auto& [k, b] : bindings) std::printf("encore (auto) K=%d binding: %s\n", k, b.c_str());

  std::printf("CPU = submit time per call. Once a call's GPU work takes longer than its submission, CUDA's\n"
              "launch queue fills and the submit time follows the GPU: read CPU columns at small K.\n");

  // ----------------------------------------------------------- recapture --
  // Raw CUDA: capture alone, capture + cudaGraphInstantiate, and capture +
  // cudaGraphExecUpdate of an executable of the same shape (buffers moved).
  const int recap_reps = opt.quick ? 5 : 21;
  std::map<int, std::map<std::string, double>> recapture;
  std::printf("\nrecapture, raw CUDA, median of %d; us\n", recap_reps);
  std::printf("%5s | %10s | %20s | %22s | %24s\n", "K", "capture", "capture+instantiate", "capture+ExecUpdate",
              "encore Run, new shape");
  for (int k : {8, 128}) {
    std::vector<double> cap, inst, upd;
    RawGraph base;
    base.graph = CaptureWork(in[0], out[0], k, s);
    EX_CUDA(cudaGraphInstantiate(&base.exec, base.graph, 0));
    for (int r = 0; r < recap_reps; ++r) {
      const float* src = in[r % kBuffers];
      float* dst = out[r % kBuffers];
      double t0 = ex::NowMicros();
      cudaGraph_t g = CaptureWork(src, dst, k, s);
      double t1 = ex::NowMicros();
      cudaGraphExec_t e = nullptr;
      EX_CUDA(cudaGraphInstantiate(&e, g, 0));
      double t2 = ex::NowMicros();
      cap.push_back(t1 - t0);
      inst.push_back(t2 - t0);
      EX_CUDA(cudaGraphExecDestroy(e));
      EX_CUDA(cudaGraphDestroy(g));

      t0 = ex::NowMicros();
      g = CaptureWork(src, dst, k, s);
      cudaGraphExecUpdateResultInfo info{};
      cudaError_t err = cudaGraphExecUpdate(base.exec, g, &info);
      t1 = ex::NowMicros();
      if (err != cudaSuccess) {
        Error("cudaGraphExecUpdate K=" + std::to_string(k) + ": " + cudaGetErrorName(err));
        (void)cudaGetLastError();
      }
      upd.push_back(t1 - t0);
      EX_CUDA(cudaGraphDestroy(g));
    }
    EX_CUDA(cudaGraphLaunch(base.exec, s));  // the updated executable still runs
    float src_val = 10.0f * ((recap_reps - 1) % kBuffers + 1);
    ExpectAll(out[(recap_reps - 1) % kBuffers], src_val + k, s, "updated raw graph K=" + std::to_string(k));

    // encore, for reference: on_new_shape=recapture with one graph kept, so
    // every call alternating between two shapes recaptures and updates the
    // executable in place. Each Run includes the launch.
    encore::MethodFlags f;
    f.warmup_calls = 0;
    f.on_new_shape = encore::ShapePolicy::kRecapture;
    f.max_graphs = 1;
    encore::Method* m = register_k("recapture_k" + std::to_string(k), k, f);
    std::vector<double> runs;
    for (int r = 0; r < recap_reps + 1; ++r) {
      encore::TensorRef a = ex::Floats(in[0], {r % 2 ? kElems - 1 : kElems});
      encore::TensorRef b = ex::Floats(out[0], {r % 2 ? kElems - 1 : kElems});
      EX_CUDA(cudaStreamSynchronize(s));
      double t0 = ex::NowMicros();
      ex::CheckOk(m->Run({&a, 1}, {&b, 1}, s), "Method::Run (recapture)");
      double t1 = ex::NowMicros();
      if (r > 0) runs.push_back(t1 - t0);  // the first call is a plain capture
    }
    EX_CUDA(cudaStreamSynchronize(s));
    encore::MethodReport rep = m->Report();
    ex::CheckOk(m->Release(), "Release");

    auto& row = recapture[k];
    row["capture_us"] = Median(cap);
    row["capture_instantiate_us"] = Median(inst);
    row["capture_update_us"] = Median(upd);
    row["encore_recapture_run_us"] = Median(runs);
    row["encore_updates_in_place"] = static_cast<double>(rep.updates_in_place);
    row["encore_instantiations"] = static_cast<double>(rep.instantiations);
    std::printf("%5d | %10.1f | %20.1f | %22.1f | %14.1f (%lld in place)\n", k, row["capture_us"],
                row["capture_instantiate_us"], row["capture_update_us"], row["encore_recapture_run_us"],
                static_cast<long long>(rep.updates_in_place));
  }

  // -------------------------------------------------------------- memory --
  const long long kReplays = opt.quick ? 10000 : 100000;
  encore::Method* mem = register_k("memory_k1", 1, encore::MethodFlags{});
  for (int i = 0; i < 5; ++i) ex::CheckOk(mem->Run({&in_refs[i % 4], 1}, {&out_refs[i % 4], 1}, s), "Run");
  EX_CUDA(cudaStreamSynchronize(s));
  auto snapshot = [&]() {
    size_t free_b = 0, total_b = 0;
    EX_CUDA(cudaMemGetInfo(&free_b, &total_b));
    encore::MethodReport r = mem->Report();
    return std::map<std::string, long long>{{"replays", r.replays},
                                            {"reserved_bytes", (long long)r.memory.reserved_bytes},
                                            {"live_bytes", (long long)r.memory.live_bytes},
                                            {"device_used_bytes", (long long)(total_b - free_b)}};
  };
  auto mem_before = snapshot();
  for (long long i = 0; i < kReplays; ++i) {
    encore::Status st = mem->Run({&in_refs[i % 4], 1}, {&out_refs[i % 4], 1}, s);
    if (!st.ok()) ex::Fail("Method::Run: " + st.ToString());
  }
  EX_CUDA(cudaStreamSynchronize(s));
  auto mem_after = snapshot();
  const bool mem_equal = mem_before["reserved_bytes"] == mem_after["reserved_bytes"] &&
                         mem_before["live_bytes"] == mem_after["live_bytes"] &&
                         mem_before["device_used_bytes"] == mem_after["device_used_bytes"];
  std::printf("\nmemory of a K=1 method    %12s %12s %20s\n", "reserved", "live", "cudaMemGetInfo used");
  std::printf("  after %6lld replays    %12lld %12lld %20lld\n", mem_before["replays"], mem_before["reserved_bytes"],
              mem_before["live_bytes"], mem_before["device_used_bytes"]);
  std::printf("  after %6lld replays    %12lld %12lld %20lld   %s\n", mem_after["replays"], mem_after["reserved_bytes"],
              mem_after["live_bytes"], mem_after["device_used_bytes"], mem_equal ? "equal" : "GREW");
  if (!mem_equal) Error("memory changed across replays");
  if (mem_after["replays"] - mem_before["replays"] != kReplays) Error("memory_k1 did not replay every call");

  // ------------------------------------------------------------- targets --
  const Timing& e1 = per_call[1]["encore"];
  const Timing& r1 = per_call[1]["raw_graph"];
  const Timing& c1 = per_call[1]["raw_graph_copies"];
  const Timing& e128 = per_call[128]["encore"];
  const Timing& r128 = per_call[128]["raw_graph"];
  struct Target {
    std::string name, rule;
    double value, limit;
    bool met;
  };
  std::vector<Target> targets = {
      {"cpu_k1_vs_raw", "encore CPU/call at K=1 <= 1.5 x raw graph", e1.cpu_us / r1.cpu_us, 1.5,
       e1.cpu_us <= 1.5 * r1.cpu_us},
      {"cpu_k1_vs_hand_staged", "encore CPU/call at K=1 >= 3x less than raw graph + copies", c1.cpu_us / e1.cpu_us,
       3.0, c1.cpu_us >= 3.0 * e1.cpu_us},
      {"e2e_k128_vs_raw", "encore end-to-end/call at K=128 <= 1.03 x raw graph", e128.e2e_us / r128.e2e_us, 1.03,
       e128.e2e_us <= 1.03 * r128.e2e_us},
  };
  std::printf("\ntargets (the PyTorch one is checked by bench/torch_bench.py)\n");
  for (const Target& t : targets) {
    std::printf("  %-58s ratio %6.2f (limit %.2f)  %s\n", t.rule.c_str(), t.value, t.limit,
                t.met ? "met" : "MISSED");
  }

  // ---------------------------------------------------------------- JSON --
  std::string j = "{\n  \"bench\": \"encore_bench\",\n";
  j += "  \"device\": \"" + Escape(prop.name) + "\",\n";
  j += "  \"driver_version\": " + std::to_string(driver) + ",\n  \"runtime_version\": " + std::to_string(runtime) +
       ",\n";
  j += "  \"quick\": " + std::string(opt.quick ? "true" : "false") + ",\n";
  j += "  \"elements\": " + std::to_string(kElems) + ",\n  \"buffers_rotated\": " + std::to_string(kBuffers) +
       ",\n  \"repeats\": " + std::to_string(repeats) + ",\n";
  j += "  \"per_call\": [\n";
  bool first = true;
  for (auto& [k, row] : per_call) {
    j += std::string(first ? "" : ",\n") + "    {\"k\": " + std::to_string(k) + ", \"n\": " +
         std::to_string(calls_of[k]) + ", \"eager\": " + TimingJson(row["eager"]) + ", \"raw_graph\": " +
         TimingJson(row["raw_graph"]) + ", \"raw_graph_copies\": " + TimingJson(row["raw_graph_copies"]) +
         ", \"encore\": " + TimingJson(row["encore"]) + ", \"encore_staged\": " + TimingJson(row["encore_staged"]) +
         "}";
    first = false;
  }
  j += "\n  ],\n  \"recapture\": [\n";
  first = true;
  for (auto& [k, row] : recapture) {
    j += std::string(first ? "" : ",\n") + "    {\"k\": " + std::to_string(k);
    for (auto& [name, v] : row) j += ", \"" + name + "\": " + Num(v);
    j += "}";
    first = false;
  }
  j += "\n  ],\n  \"memory\": {\"k\": 1, \"equal\": " + std::string(mem_equal ? "true" : "false");
  for (auto* snap : {&mem_before, &mem_after}) {
    j += std::string(", \"") + (snap == &mem_before ? "after_first" : "after_all") + "\": {";
    bool f2 = true;
    for (auto& [name, v] : *snap) {
      j += std::string(f2 ? "" : ", ") + "\"" + name + "\": " + std::to_string(v);
      f2 = false;
    }
    j += "}";
  }
  j += "},\n  \"targets\": [\n";
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    j += "    {\"name\": \"" + t.name + "\", \"rule\": \"" + Escape(t.rule) + "\", \"ratio\": " +
         Num(t.value) + ", \"limit\": " + Num(t.limit) + ", \"met\": " + (t.met ? "true" : "false") + "}" +
         (i + 1 < targets.size() ? ",\n" : "\n");
  }
  j += "  ],\n  \"errors\": " + std::to_string(g_errors) + "\n}\n";

  for (const std::string& p : encore::bench::WriteResults(j, opt.json, "bench_results.json")) {
    Error("could not write " + p);
  }

  ex::CheckOk(mem->Release(), "Release");
  for (int j2 = 0; j2 < kBuffers; ++j2) {
    cudaFree(in[j2]);
    cudaFree(out[j2]);
  }
  cudaFree(static_in);
  cudaFree(static_out);
  cudaStreamDestroy(s);
  if (g_errors) {
    std::fprintf(stderr, "encore_bench: %d error(s)\n", g_errors);
    return 1;
  }
  return 0;
}
