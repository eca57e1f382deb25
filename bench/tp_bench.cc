// SPDX-License-Identifier: Apache-2.0
// tp_bench: a tensor-parallel step on every visible GPU (one rank per GPU,
// threads, one NCCL communicator), encore against eager and a raw CUDA graph.
//
// The work of one call, for (K, N) with K even, on rank r:
//   y = x * (r + 1); K/2 - 1 kernels of y += 1; all-reduce(sum) of y;
//   K/2 kernels of y += 1
// for (K, N) in {2, 16} x {4096, 1M}, with the caller's x and y rotating
// between 2 buffers each:
//   eager           the work launched on the caller's buffers
//   raw             a CUDA graph of the work captured by hand over fixed
//                   buffers, cudaGraphLaunch only (the floor: no staging,
//                   buffers never move)
//   encore_staged   Method::Run with an NcclConsensus (3 warmups, the vote, a
//                   capture, then replays that stage the moving buffers),
//                   binding=staged
//   encore_auto     the same method with binding=auto
//   encore_direct   the same method with binding=direct
// Each encore variant is a method of its own; after the run every rank
// prints the binding its graph got and why (MethodReport::binding,
// binding_reason), so the run shows what auto chose for a graph holding an
// NCCL all-reduce.
// CPU us/call: time to submit N calls (no sync) / N; end-to-end us/call:
// submit + sync / N; median of 7 repeats, the variants taking turns per
// repeat and the ranks starting each repeat together. The table shows the
// slowest rank (a step is as slow as its slowest rank); the JSON has every
// rank. bench/torch_tp_bench.py measures PyTorch's side of the same work.
//
//   bench/tp_bench [--json PATH] [--quick]
// writes JSON to PATH (default ./tp_results.json) and copies to $OUT and
// $RESULTS when set. Exits 77 without a GPU, 1 if a result is wrong.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/encore.h"
#include "encore/examples/example_util.h"
#include "encore/interop/nccl/nccl_consensus.h"
#include "encore/tests/test_kernels.h"

namespace ex = encore::examples;
using encore::bench::MeasureInterleaved;
using encore::bench::Timing;
using encore::bench::Variants;
using encore::testing::LaunchAffine;
using encore::testing::LaunchIncrementK;

namespace {

struct Config {
  int k;
  int64_t n;
  int calls;
};
const Config kConfigs[] = {{2, 4096, 1000}, {2, 1 << 20, 300}, {16, 4096, 1000}, {16, 1 << 20, 300}};
const char* const kVariants[] = {"eager", "raw", "encore_staged", "encore_auto", "encore_direct"};
struct EncoreVariant {
  const char* name;
  encore::Binding binding;
};
const EncoreVariant kEncoreVariants[] = {{"encore_staged", encore::Binding::kStaged},
                                         {"encore_auto", encore::Binding::kAuto},
                                         {"encore_direct", encore::Binding::kDirect}};

std::mutex g_mu;
std::vector<std::string> g_errors;
void Error(const std::string& what) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "tp_bench: ERROR: %s\n", what.c_str());
  g_errors.push_back(what);
}

cudaError_t Nccl(ncclResult_t r) { return r == ncclSuccess ? cudaSuccess : cudaErrorUnknown; }

// The work of one call, on rank `rank`, reading x and writing y.
cudaError_t LaunchWork(const float* x, float* y, const Config& c, int rank, ncclComm_t comm, cudaStream_t s) {
  cudaError_t e = LaunchAffine(x, y, rank + 1.0f, 0.0f, c.n, s);
  if (e == cudaSuccess && c.k / 2 > 1) e = LaunchIncrementK(y, c.n, c.k / 2 - 1, s);
  if (e == cudaSuccess) e = Nccl(ncclAllReduce(y, y, c.n, ncclFloat, ncclSum, comm, s));
  if (e == cudaSuccess) e = LaunchIncrementK(y, c.n, c.k / 2, s);
  return e;
}

using Results = std::map<std::string, std::vector<Timing>>;  // variant -> per rank
// What an encore variant's graph was bound as on one rank, and why.
struct BindingSeen {
  std::string binding;
  std::string reason;
};
using Bindings = std::map<std::string, std::vector<BindingSeen>>;  // variant -> per rank

struct Shared {
  int ranks;
  std::vector<ncclComm_t> comms;
  std::barrier<> sync;
  std::vector<Config> configs;   // kConfigs, with fewer calls under --quick
  int repeats;
  std::vector<Results> results;  // per config
  std::vector<Bindings> bindings;  // per config
  bool quick;
};

// Every element of y should be (j % 97) * S + R * (K/2 - 1) + K/2.
void ExpectOutput(const float* y, const Config& c, int ranks, int rank, cudaStream_t s, const std::string& variant) {
  std::vector<float> h(c.n);
  EX_CUDA(cudaMemcpyAsync(h.data(), y, c.n * sizeof(float), cudaMemcpyDeviceToHost, s));
  EX_CUDA(cudaStreamSynchronize(s));
  const float scale_sum = ranks * (ranks + 1) / 2.0f;
  for (int64_t j = 0; j < c.n; ++j) {
    const float want = (j % 97) * scale_sum + ranks * (c.k / 2 - 1.0f) + c.k / 2.0f;
    if (h[j] != want) {
      Error("rank " + std::to_string(rank) + ", K=" + std::to_string(c.k) + " N=" + std::to_string(c.n) + ", " +
            variant + ": y[" + std::to_string(j) + "] is " + std::to_string(h[j]) + ", expected " +
            std::to_string(want));
      return;
    }
  }
}

void RunRank(Shared& sh, int rank) {
  EX_CUDA(cudaSetDevice(rank));
  ncclComm_t comm = sh.comms[rank];
  auto consensus = EX_OK(encore::NcclConsensus::Create(comm, std::chrono::seconds(60)));
  encore::ManagerOptions options;
  options.consensus = consensus;
  options.logger = std::make_shared<spdlog::logger>("tp_bench_quiet");
  auto manager = EX_OK(encore::Manager::Create(options));
  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (size_t ci = 0; ci < sh.configs.size(); ++ci) {
    const Config c = sh.configs[ci];
    const size_t bytes = c.n * sizeof(float);
    float *x[2], *y[2], *fx, *fy;
    std::vector<float> h(c.n);
    for (int64_t j = 0; j < c.n; ++j) h[j] = static_cast<float>(j % 97);
    for (float** p : {&x[0], &x[1], &y[0], &y[1], &fx, &fy}) EX_CUDA(cudaMalloc(p, bytes));
    for (float* p : {x[0], x[1], fx}) EX_CUDA(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice));

    // raw: captured by hand over the fixed buffers fx, fy, after one eager
    // call: NCCL connects a communicator's peers at its first collective,
    // and with that collective inside this capture ncclAllReduce failed
    // (NCCL 2.28.3, two threads of one process). Thread-local capture: the
    // other ranks' threads capture at the same time.
    EX_CUDA(LaunchWork(fx, fy, c, rank, comm, s));
    EX_CUDA(cudaStreamSynchronize(s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    EX_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    EX_CUDA(LaunchWork(fx, fy, c, rank, comm, s));
    EX_CUDA(cudaStreamEndCapture(s, &graph));
    EX_CUDA(cudaGraphInstantiate(&exec, graph, 0));

    // One method per binding; every rank registers and first calls them in
    // the same order, so their votes pair.
    std::vector<encore::Method*> methods;
    for (const EncoreVariant& v : kEncoreVariants) {
      encore::MethodSpec spec;
      spec.name = "tp_step_k" + std::to_string(c.k) + "_n" + std::to_string(c.n) + "_" + v.name;
      spec.constants = std::vector<encore::Constant>{};
      encore::MethodFlags flags;
      flags.binding = v.binding;
      spec.flags = flags;
      spec.fn = [c, rank, comm](encore::Call& call) -> encore::Status {
        return encore::CudaStatus(LaunchWork(static_cast<const float*>(call.input(0).data),
                                             static_cast<float*>(call.output(0).data), c, rank, comm, call.stream()),
                                  "tp step");
      };
      methods.push_back(EX_OK(manager->Register(std::move(spec))));
    }
    auto run_method = [&](encore::Method* method, int i) {
      encore::TensorRef in = ex::Floats(x[i % 2], {c.n}), out = ex::Floats(y[i % 2], {c.n});
      EX_OK(method->Run({&in, 1}, {&out, 1}, s));
    };

    Variants variants = {
        {"eager", [&](int i) { EX_CUDA(LaunchWork(x[i % 2], y[i % 2], c, rank, comm, s)); }},
        {"raw", [&](int) { EX_CUDA(cudaGraphLaunch(exec, s)); }},
    };
    for (size_t v = 0; v < methods.size(); ++v) {
      variants.push_back({kEncoreVariants[v].name, [&, v](int i) { run_method(methods[v], i); }});
    }
    // The ranks start each timed run together.
    const std::map<std::string, Timing> timing =
        MeasureInterleaved(s, c.calls, sh.repeats, 20, variants, [&] { sh.sync.arrive_and_wait(); });
    // The last calls of eager and encore wrote y[(calls - 1) % 2]; check
    // both buffers after one more call each, and raw's fixed output.
    for (int i = 0; i < 2; ++i) {
      EX_CUDA(cudaMemsetAsync(y[i], 0, bytes, s));
      variants[0].second(i);
    }
    for (int i = 0; i < 2; ++i) ExpectOutput(y[i], c, sh.ranks, rank, s, "eager");
    for (size_t v = 0; v < methods.size(); ++v) {
      for (int i = 0; i < 2; ++i) {
        EX_CUDA(cudaMemsetAsync(y[i], 0, bytes, s));
        run_method(methods[v], i);
      }
      for (int i = 0; i < 2; ++i) ExpectOutput(y[i], c, sh.ranks, rank, s, kEncoreVariants[v].name);
    }
    ExpectOutput(fy, c, sh.ranks, rank, s, "raw");
    std::vector<BindingSeen> seen;
    for (encore::Method* method : methods) {
      encore::MethodReport report = method->Report();
      if (report.captures != 1 || report.replays < sh.repeats * c.calls) {
        Error("rank " + std::to_string(rank) + ", " + method->name() + ": " + std::to_string(report.captures) +
              " captures and " + std::to_string(report.replays) +
              " replays; expected 1 capture and every timed call a replay (graphs off: " + report.graphs_off_reason +
              ")");
      }
      seen.push_back({std::string(encore::BindingName(report.binding)), report.binding_reason});
    }
    {
      std::lock_guard<std::mutex> lock(g_mu);
      for (const auto& [name, t] : timing) {
        auto& v = sh.results[ci][name];
        v.resize(sh.ranks);
        v[rank] = t;
      }
      for (size_t v = 0; v < methods.size(); ++v) {
        auto& b = sh.bindings[ci][kEncoreVariants[v].name];
        b.resize(sh.ranks);
        b[rank] = seen[v];
      }
    }
    EX_CUDA(cudaStreamSynchronize(s));
    for (encore::Method* method : methods) EX_OK(method->Release());
    EX_CUDA(cudaGraphExecDestroy(exec));
    EX_CUDA(cudaGraphDestroy(graph));
    for (float* p : {x[0], x[1], y[0], y[1], fx, fy}) EX_CUDA(cudaFree(p));
    sh.sync.arrive_and_wait();
  }
  EX_CUDA(cudaStreamDestroy(s));
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string Json(const Shared& sh, const std::string& device) {
  std::string j = "{\n  \"bench\": \"tp_bench\",\n  \"device\": \"" + device + "\",\n  \"ranks\": " +
                  std::to_string(sh.ranks) + ",\n  \"quick\": " + (sh.quick ? "true" : "false") + ",\n  \"configs\": [";
  for (size_t ci = 0; ci < sh.configs.size(); ++ci) {
    const Config& c = sh.configs[ci];
    j += std::string(ci ? "," : "") + "\n    {\"k\": " + std::to_string(c.k) + ", \"n\": " + std::to_string(c.n) +
         ", \"calls\": " + std::to_string(c.calls);
    for (const char* v : kVariants) {
      j += ", \"" + std::string(v) + "\": [";
      const auto& per_rank = sh.results[ci].at(v);
      for (size_t r = 0; r < per_rank.size(); ++r) {
        char buf[96];
        std::snprintf(buf, sizeof(buf), "%s{\"cpu_us\": %.3f, \"e2e_us\": %.3f}", r ? ", " : "", per_rank[r].cpu_us,
                      per_rank[r].e2e_us);
        j += buf;
      }
      j += "]";
    }
    j += ", \"bindings\": {";
    bool first = true;
    for (const auto& [variant, per_rank] : sh.bindings[ci]) {
      j += std::string(first ? "" : ", ") + JsonString(variant) + ": [";
      first = false;
      for (size_t r = 0; r < per_rank.size(); ++r) {
        j += std::string(r ? ", " : "") + "{\"binding\": " + JsonString(per_rank[r].binding) +
             ", \"reason\": " + JsonString(per_rank[r].reason) + "}";
      }
      j += "]";
    }
    j += "}}";
  }
  j += "\n  ],\n  \"errors\": " + std::to_string(g_errors.size()) + "\n}\n";
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = ex::RequireGpu("tp_bench")) return rc;
  std::string json_path = "tp_results.json";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: tp_bench [--json PATH] [--quick]\n");
      return 2;
    }
  }
  int ranks = 0;
  EX_CUDA(cudaGetDeviceCount(&ranks));
  cudaDeviceProp prop{};
  EX_CUDA(cudaGetDeviceProperties(&prop, 0));
  int nccl_version = 0;
  ncclGetVersion(&nccl_version);
  std::printf("tp_bench: %d rank(s), one per %s, NCCL %d%s\n", ranks, prop.name, nccl_version,
              quick ? " (quick)" : "");
  std::vector<Config> configs(std::begin(kConfigs), std::end(kConfigs));
  if (quick) {
    for (Config& c : configs) c.calls = 50;
  }
  Shared sh{ranks, std::vector<ncclComm_t>(ranks), std::barrier<>(ranks), configs, quick ? 2 : 7,
            std::vector<Results>(configs.size()), std::vector<Bindings>(configs.size()), quick};
  std::vector<int> devices(ranks);
  for (int r = 0; r < ranks; ++r) devices[r] = r;
  if (ncclCommInitAll(sh.comms.data(), ranks, devices.data()) != ncclSuccess) {
    std::fprintf(stderr, "tp_bench: ncclCommInitAll failed\n");
    return 1;
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&sh, r] { RunRank(sh, r); });
  for (auto& t : threads) t.join();
  for (ncclComm_t c : sh.comms) ncclCommDestroy(c);

  std::printf("\nus per call, slowest of %d rank(s) (median of %d repeats; cpu = submit, e2e = submit + sync)\n",
              ranks, sh.repeats);
  std::printf("%3s %8s | %-19s | %-19s | %-19s | %-19s | %-19s | %s\n", "K", "N", "eager cpu / e2e",
              "raw graph", "encore staged", "encore auto", "encore direct", "e2e vs raw: staged / auto / direct");
  for (size_t ci = 0; ci < sh.configs.size(); ++ci) {
    std::map<std::string, Timing> worst;
    for (const char* v : kVariants) {
      for (const Timing& t : sh.results[ci][v]) {
        worst[v].cpu_us = std::max(worst[v].cpu_us, t.cpu_us);
        worst[v].e2e_us = std::max(worst[v].e2e_us, t.e2e_us);
      }
    }
    auto cell = [&](const char* v) {
      char b[48];
      std::snprintf(b, sizeof(b), "%7.2f / %7.2f", worst[v].cpu_us, worst[v].e2e_us);
      return std::string(b);
    };
    auto vs_raw = [&](const char* v) { return worst[v].e2e_us / worst["raw"].e2e_us; };
    std::printf("%3d %8lld | %-19s | %-19s | %-19s | %-19s | %-19s | %.3fx / %.3fx / %.3fx\n", sh.configs[ci].k,
                static_cast<long long>(sh.configs[ci].n), cell("eager").c_str(), cell("raw").c_str(),
                cell("encore_staged").c_str(), cell("encore_auto").c_str(), cell("encore_direct").c_str(),
                vs_raw("encore_staged"), vs_raw("encore_auto"), vs_raw("encore_direct"));
  }
  // What each binding request got, per rank (MethodReport::binding and
  // binding_reason of the method's graph).
  std::printf("\nbinding chosen (MethodReport::binding, binding_reason), every rank:\n");
  for (size_t ci = 0; ci < sh.configs.size(); ++ci) {
    for (const EncoreVariant& v : kEncoreVariants) {
      const auto& per_rank = sh.bindings[ci][v.name];
      for (size_t r = 0; r < per_rank.size(); ++r) {
        std::printf("  K=%d N=%lld %-13s rank %zu: binding=%s binding_reason=\"%s\"\n", sh.configs[ci].k,
                    static_cast<long long>(sh.configs[ci].n), v.name, r, per_rank[r].binding.c_str(),
                    per_rank[r].reason.c_str());
      }
    }
  }
  // The target: where the all-reduce's buffers can be bound (a
  // direct graph), encore end to end <= 1.03x the raw graph at 1M floats.
  for (size_t ci = 0; ci < sh.configs.size(); ++ci) {
    if (sh.configs[ci].n < (1 << 20)) continue;
    for (const EncoreVariant& v : kEncoreVariants) {
      if (v.binding == encore::Binding::kStaged) continue;
      bool direct = true;
      for (const BindingSeen& b : sh.bindings[ci][v.name]) direct &= b.binding == "direct";
      double worst_e2e = 0, worst_raw = 0;
      for (const Timing& t : sh.results[ci][v.name]) worst_e2e = std::max(worst_e2e, t.e2e_us);
      for (const Timing& t : sh.results[ci]["raw"]) worst_raw = std::max(worst_raw, t.e2e_us);
      const double ratio = worst_e2e / worst_raw;
      std::printf("target K=%d N=%lld %s: %s\n", sh.configs[ci].k, static_cast<long long>(sh.configs[ci].n), v.name,
                  !direct ? "not applicable: the graph is staged on some rank (see binding_reason)"
                  : ratio <= 1.03
                      ? ("met, " + std::to_string(ratio) + "x the raw graph (<= 1.03x)").c_str()
                      : ("MISSED, " + std::to_string(ratio) + "x the raw graph (> 1.03x)").c_str());
    }
  }
  const std::string json = Json(sh, prop.name);
  for (const std::string& p : encore::bench::WriteResults(json, json_path, "tp_results.json")) {
    Error("could not write " + p);
  }
  if (!g_errors.empty()) {
    std::fprintf(stderr, "tp_bench: %zu error(s)\n", g_errors.size());
    return 1;
  }
  return 0;
}
