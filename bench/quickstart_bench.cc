// SPDX-License-Identifier: Apache-2.0
// quickstart_bench: what one call of the quickstart's MLP (three kernels,
// examples/quickstart_mlp.h) costs, eagerly, as bare CUDA graphs captured by
// hand, and through encore with binding=auto and binding=staged, with the
// caller's input and output buffers moving every call (8 inputs and 5 outputs
// taking turns: 40 address sets).
//
//   quickstart_bench [--quick]
//
// Rows: eager launches; one bare graph on fixed buffers (the floor); one bare
// graph per address set, taking turns as encore's executables do; the same
// bare graph ending in an event record node, as encore's graphs end; encore
// auto and staged with buffers moving, and auto on fixed buffers. Batches of
// 100 calls keep the launch queue from filling (each call is about 22 us of
// GPU work), so the CPU column is submission alone. Exits 77 without a GPU,
// 1 if an output differs from the CPU's or a method did not replay.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/encore.h"
#include "encore/examples/example_util.h"
#include "encore/examples/quickstart_mlp.h"

namespace ex = encore::examples;
namespace {

using ex::kBatch, ex::kHidden, ex::kIn, ex::kOut;

std::vector<float> CpuLinear(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                             int k, int n, bool relu) {
  std::vector<float> y(kBatch * n);
  for (int r = 0; r < kBatch; ++r) {
    for (int c = 0; c < n; ++c) {
      double acc = b[c];
      for (int i = 0; i < k; ++i) acc += double(x[r * k + i]) * w[i * n + c];
      y[r * n + c] = relu ? std::max(0.0, acc) : acc;
    }
  }
  return y;
}

// The GEMM kernel against the CPU, on the weights `rng` makes next.
void CheckKernels(cudaStream_t s) {
  std::mt19937 rng(11);
  auto w1 = ex::Random(kIn * kHidden, 0.06f, rng), w2 = ex::Random(kHidden * kHidden, 0.06f, rng);
  auto w3 = ex::Random(kHidden * kOut, 0.06f, rng), b1 = ex::Random(kHidden, 0.1f, rng);
  auto b2 = ex::Random(kHidden, 0.1f, rng), b3 = ex::Random(kOut, 0.1f, rng), xh = ex::Random(kBatch * kIn, 1, rng);
  std::mt19937 any(0);
  ex::Mlp m(any);  // its weights are replaced by the ones kept here
  m.w1.Upload(w1), m.w2.Upload(w2), m.w3.Upload(w3), m.b1.Upload(b1), m.b2.Upload(b2), m.b3.Upload(b3);
  ex::DeviceArray<float> x(kBatch * kIn), h1(kBatch * kHidden), h2(kBatch * kHidden), y(kBatch * kOut);
  x.Upload(xh);
  EX_CUDA(ex::Forward(m, x.get(), h1.get(), h2.get(), y.get(), s));
  const std::vector<float> got = y.Download(s);
  const auto cpu = CpuLinear(CpuLinear(CpuLinear(xh, w1, b1, kIn, kHidden, true), w2, b2, kHidden, kHidden, true), w3,
                             b3, kHidden, kOut, false);
  for (size_t j = 0; j < cpu.size(); ++j) {
    ex::Expect(std::fabs(cpu[j] - got[j]) <= 1e-4f + 1e-4f * std::fabs(cpu[j]),
               "GEMM kernel disagrees with the CPU at element " + std::to_string(j));
  }
}

struct Buffers {
  std::vector<ex::DeviceArray<float>> in, out;
  ex::DeviceArray<float> h1{kBatch * kHidden}, h2{kBatch * kHidden};
  std::vector<encore::TensorRef> xs, ys;  // described once, outside the timed loop

  explicit Buffers(std::mt19937& rng) {
    for (int i = 0; i < 8; ++i) {
      in.emplace_back(kBatch * kIn);
      in.back().Upload(ex::Random(kBatch * kIn, 1.0f, rng));
      xs.push_back(ex::Floats(in.back().get(), {kBatch, kIn}));
    }
    for (int i = 0; i < 5; ++i) {
      out.emplace_back(kBatch * kOut);
      ys.push_back(ex::Floats(out.back().get(), {kBatch, kOut}));
    }
  }
};

// A bare executable of the MLP on `x` and `y`, captured by hand; with
// `record_to`, ending in an event record node of it, as encore's graphs end.
cudaGraphExec_t CaptureByHand(const ex::Mlp& mlp, Buffers& b, const float* x, float* y, cudaEvent_t record_to,
                              cudaStream_t s) {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  EX_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EX_CUDA(ex::Forward(mlp, x, b.h1.get(), b.h2.get(), y, s));
  if (record_to) EX_CUDA(cudaEventRecordWithFlags(record_to, s, cudaEventRecordExternal));  // a node
  EX_CUDA(cudaStreamEndCapture(s, &g));
  EX_CUDA(cudaGraphInstantiate(&exec, g, 0));
  EX_CUDA(cudaGraphDestroy(g));
  return exec;
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = ex::RequireGpu("quickstart_bench")) return rc;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CheckKernels(s);
  std::mt19937 rng(7);
  const ex::Mlp mlp(rng);
  Buffers b(rng);
  auto manager = EX_OK(encore::Manager::Create());
  encore::Method* direct = EX_OK(manager->Register(ex::MlpSpec(mlp, "mlp")));
  encore::MethodSpec staged_spec = ex::MlpSpec(mlp, "mlp_staged");
  encore::MethodFlags staged_flags;
  staged_flags.binding = encore::Binding::kStaged;
  staged_spec.flags = staged_flags;
  encore::Method* staged = EX_OK(manager->Register(std::move(staged_spec)));

  const cudaGraphExec_t bare = CaptureByHand(mlp, b, b.in[0].get(), b.out[0].get(), nullptr, s);
  cudaEvent_t done = nullptr;
  EX_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  const cudaGraphExec_t bare_record = CaptureByHand(mlp, b, b.in[0].get(), b.out[0].get(), done, s);
  std::vector<cudaGraphExec_t> bare_sets;
  for (int i = 0; i < 40; ++i) bare_sets.push_back(CaptureByHand(mlp, b, b.in[i % 8].get(), b.out[i % 5].get(), nullptr, s));
  auto run = [&](encore::Method* m, int i) { EX_OK(m->Run({&b.xs[i % 8], 1}, {&b.ys[i % 5], 1}, s)); };
  const std::string auto_name = "encore, binding=auto, buffers moving";
  const encore::bench::Variants variants = {
      {"eager: 3 kernel launches",
       [&](int i) { EX_CUDA(ex::Forward(mlp, b.in[i % 8].get(), b.h1.get(), b.h2.get(), b.out[i % 5].get(), s)); }},
      {"bare graph, fixed buffers", [&](int) { EX_CUDA(cudaGraphLaunch(bare, s)); }},
      {"bare graphs, one per address set", [&](int i) { EX_CUDA(cudaGraphLaunch(bare_sets[i % 40], s)); }},
      {"bare graph + event record node, fixed", [&](int) { EX_CUDA(cudaGraphLaunch(bare_record, s)); }},
      {auto_name, [&](int i) { run(direct, i); }},
      {"encore, binding=staged, buffers moving", [&](int i) { run(staged, i); }},
      {"encore, binding=auto, fixed buffers", [&](int) { EX_OK(direct->Run({&b.xs[0], 1}, {&b.ys[0], 1}, s)); }},
  };
  const int calls = quick ? 10 : 100, repeats = quick ? 3 : 41;
  const auto t = encore::bench::MeasureInterleaved(s, calls, repeats, /*warmup=*/10, variants);
  std::printf("quickstart_bench: MLP %d-%d-%d-%d, batch %d; median of %d x %d calls, variants taking turns\n", kIn,
              kHidden, kHidden, kOut, kBatch, repeats, calls);
  std::printf("  %-44s %14s %14s\n", "", "CPU submit us", "end-to-end us");
  for (const auto& [name, fn] : variants) {
    std::printf("  %-44s %14.2f %14.2f\n", name.c_str(), t.at(name).cpu_us, t.at(name).e2e_us);
  }
  std::printf("encore (%s) against the bare graph: CPU %.2fx with buffers moving (against one bare graph per "
              "address set), end to end %.2fx\n",
              std::string(encore::BindingName(direct->Report().binding)).c_str(),
              t.at(auto_name).cpu_us / t.at("bare graphs, one per address set").cpu_us,
              t.at(auto_name).e2e_us / t.at("bare graph, fixed buffers").e2e_us);
  EX_CUDA(cudaGraphExecDestroy(bare));
  EX_CUDA(cudaGraphExecDestroy(bare_record));
  EX_CUDA(cudaEventDestroy(done));
  for (cudaGraphExec_t e : bare_sets) EX_CUDA(cudaGraphExecDestroy(e));
  ex::Expect(staged->Report().binding == encore::Binding::kStaged && staged->Report().replays > 0,
             "the staged method did not replay a staged graph");
  ex::Expect(direct->Report().replays > 0, "the auto method did not replay");
  EX_CUDA(cudaStreamDestroy(s));
  return 0;
}
