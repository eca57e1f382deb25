// SPDX-License-Identifier: Apache-2.0
// quickstart: a small MLP registered with encore's Manager.
//
// The method runs three layers (a tiled GEMM + bias, ReLU on the first two) on
// a batch of 32 rows. encore runs it eagerly for 3 calls, captures it into a
// CUDA graph on the 4th and replays the graph after that, while the caller's
// input and output buffers move every call. Every output is compared bit for
// bit with the same kernels launched by hand, then eager launches and graph
// replays are timed.
//
//   bazel run //examples:quickstart      (or ./run_example)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"

namespace ex = encore::examples;
using ex::DeviceArray;

constexpr int kBatch = 32, kIn = 256, kHidden = 256, kOut = 64;

struct Mlp {
  DeviceArray<float> w1{kIn * kHidden}, b1{kHidden};
  DeviceArray<float> w2{kHidden * kHidden}, b2{kHidden};
  DeviceArray<float> w3{kHidden * kOut}, b3{kOut};
};

// The forward pass: three launches. h1 and h2 are scratch of kBatch * kHidden.
cudaError_t Forward(const Mlp& m, const float* x, float* h1, float* h2, float* y, cudaStream_t s) {
  cudaError_t e = ex::LaunchLinear(x, m.w1.get(), m.b1.get(), h1, kBatch, kIn, kHidden, /*relu=*/true, s);
  if (e == cudaSuccess) e = ex::LaunchLinear(h1, m.w2.get(), m.b2.get(), h2, kBatch, kHidden, kHidden, true, s);
  if (e == cudaSuccess) e = ex::LaunchLinear(h2, m.w3.get(), m.b3.get(), y, kBatch, kHidden, kOut, false, s);
  return e;
}

std::vector<float> Random(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The same MLP on the CPU, for a tolerance check of the GEMM kernel.
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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  if (int rc = ex::RequireGpu("quickstart")) return rc;
  cudaStream_t stream;
  EX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Weights: constants of the method (device buffers that never move).
  std::mt19937 rng(7);
  Mlp mlp;
  auto w1 = Random(mlp.w1.size(), 0.06f, rng), b1 = Random(kHidden, 0.1f, rng);
  auto w2 = Random(mlp.w2.size(), 0.06f, rng), b2 = Random(kHidden, 0.1f, rng);
  auto w3 = Random(mlp.w3.size(), 0.06f, rng), b3 = Random(kOut, 0.1f, rng);
  mlp.w1.Upload(w1), mlp.b1.Upload(b1), mlp.w2.Upload(w2), mlp.b2.Upload(b2), mlp.w3.Upload(w3), mlp.b3.Upload(b3);

  // 1. A manager, and the method registered with it.
  auto manager = EX_OK(encore::Manager::Create());
  auto make_spec = [&mlp](std::string name) {
  encore::MethodSpec spec;
  spec.name = std::move(name);
  spec.fn = [&mlp](encore::Call& call) -> encore::Status {
    const size_t hidden_bytes = kBatch * kHidden * sizeof(float);
    ENCORE_ASSIGN_OR_RETURN(void* h1, call.Allocate(hidden_bytes));  // graph-aware scratch
    ENCORE_ASSIGN_OR_RETURN(void* h2, call.Allocate(hidden_bytes));
    return encore::CudaStatus(Forward(mlp, static_cast<const float*>(call.input(0).data), static_cast<float*>(h1),
                                static_cast<float*>(h2), static_cast<float*>(call.output(0).data), call.stream()),
                        "mlp forward");
  };
  spec.constants = std::vector<encore::Constant>{
      {"w1", mlp.w1.get(), mlp.w1.bytes()}, {"b1", mlp.b1.get(), mlp.b1.bytes()},
      {"w2", mlp.w2.get(), mlp.w2.bytes()}, {"b2", mlp.b2.get(), mlp.b2.bytes()},
      {"w3", mlp.w3.get(), mlp.w3.bytes()}, {"b3", mlp.b3.get(), mlp.b3.bytes()}};
  return spec;
  };
  // binding=auto (the default) binds the graph to the caller's buffers
  // directly; the same method with binding=staged copies them in and out.
  encore::Method* method = EX_OK(manager->Register(make_spec("mlp")));
  encore::MethodSpec staged_spec = make_spec("mlp_staged");
  encore::MethodFlags staged_flags;
  staged_flags.binding = encore::Binding::kStaged;
  staged_spec.flags = staged_flags;
  encore::Method* staged = EX_OK(manager->Register(std::move(staged_spec)));

  // Inputs and outputs live in several buffers, so addresses change per call.
  std::vector<DeviceArray<float>> inputs, outputs;
  std::vector<std::vector<float>> host_inputs;
  for (int i = 0; i < 8; ++i) {
    host_inputs.push_back(Random(kBatch * kIn, 1.0f, rng));
    inputs.emplace_back(kBatch * kIn);
    inputs.back().Upload(host_inputs.back());
  }
  for (int i = 0; i < 5; ++i) outputs.emplace_back(kBatch * kOut);
  DeviceArray<float> ref(kBatch * kOut), ref_h1(kBatch * kHidden), ref_h2(kBatch * kHidden);

  // 2. 100 calls, each checked against the same kernels launched eagerly
  // (under a sanitizer 10: enough to warm up, capture and replay).
  const int kCalls = ex::Rounds(100, 10);
  int equal = 0;
  for (int i = 0; i < kCalls; ++i) {
    DeviceArray<float>& in = inputs[i % inputs.size()];
    DeviceArray<float>& out = outputs[i % outputs.size()];
    encore::TensorRef x = ex::Floats(in.get(), {kBatch, kIn});
    encore::TensorRef y = ex::Floats(out.get(), {kBatch, kOut});
    EX_OK(method->Run({&x, 1}, {&y, 1}, stream));

    EX_CUDA(Forward(mlp, in.get(), ref_h1.get(), ref_h2.get(), ref.get(), stream));
    std::vector<float> got = out.Download(stream), want = ref.Download(stream);
    if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0) {
      ++equal;
    } else {
      std::printf("call %d: output differs from the eager reference\n", i + 1);
    }
    if (i == 0) {  // The kernels themselves, against the CPU.
      const std::vector<float>& xh = host_inputs[0];
      auto cpu = CpuLinear(CpuLinear(CpuLinear(xh, w1, b1, kIn, kHidden, true), w2, b2, kHidden, kHidden, true),
                           w3, b3, kHidden, kOut, false);
      for (size_t j = 0; j < cpu.size(); ++j) {
        ex::Expect(std::fabs(cpu[j] - want[j]) <= 1e-4f + 1e-4f * std::fabs(cpu[j]),
                   "GEMM kernel disagrees with the CPU at element " + std::to_string(j));
      }
    }
  }
  encore::MethodReport r = method->Report();
  std::printf("quickstart: MLP %d-%d-%d-%d, batch %d, 3 kernels per call\n", kIn, kHidden, kHidden, kOut, kBatch);
  std::printf("%d calls, input and output addresses changing every call: %d/%d outputs equal to the eager "
              "reference bit for bit\n",
              kCalls, equal, kCalls);
  std::printf("phase=%s warmup_calls=%lld captures=%lld replays=%lld graph_nodes=%zu binding=%s\n",
              std::string(encore::MethodPhaseName(r.phase)).c_str(), (long long)r.warmup_calls,
              (long long)r.captures, (long long)r.replays, r.graph_nodes,
              std::string(encore::BindingName(r.binding)).c_str());
  std::printf("binding_reason: %s\n", r.binding_reason.c_str());
  ex::Expect(equal == kCalls, "some outputs differ from the eager reference");
  ex::Expect(r.phase == encore::MethodPhase::kReplay && r.captures == 1 && r.capture_failures == 0 &&
                 r.replays == kCalls - 4,
             "expected 3 warmup calls, 1 capture and " + std::to_string(kCalls - 4) + " replays");

  // 3. Time per call: the same kernels launched eagerly, as a bare CUDA
  // graph captured by hand on fixed buffers (the floor), and encore's
  // replays on buffers that change every call. The ways take turns, one
  // repeat each, so drifting clocks touch all alike.
  // A bare executable of the same kernels on buffers `x` and `y`, captured by
  // hand; with `record_to`, ending with an event record node of it, as
  // encore's graphs end (a later call on another stream waits on it).
  auto capture_by_hand = [&](const float* x, float* y, cudaEvent_t record_to) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    EX_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    EX_CUDA(Forward(mlp, x, ref_h1.get(), ref_h2.get(), y, stream));
    if (record_to) EX_CUDA(cudaEventRecordWithFlags(record_to, stream, cudaEventRecordExternal));  // a node
    EX_CUDA(cudaStreamEndCapture(stream, &g));
    EX_CUDA(cudaGraphInstantiate(&exec, g, 0));
    EX_CUDA(cudaGraphDestroy(g));
    return exec;
  };
  const cudaGraphExec_t bare = capture_by_hand(inputs[0].get(), outputs[0].get(), nullptr);
  // The same with the record node: what that node costs.
  cudaEvent_t done = nullptr;
  EX_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  const cudaGraphExec_t bare_record = capture_by_hand(inputs[0].get(), outputs[0].get(), done);
  // And one bare executable per address set the timed calls use (40), taking
  // turns as encore's do: what switching executables costs by itself.
  std::vector<cudaGraphExec_t> bare_sets;
  for (int i = 0; i < 40; ++i) bare_sets.push_back(capture_by_hand(inputs[i % 8].get(), outputs[i % 5].get(), nullptr));
  // The tensors are described once, outside the timed loop, as the bare
  // graph's launch needs no description at all.
  std::vector<encore::TensorRef> xs, ys;
  for (int j = 0; j < 8; ++j) xs.push_back(ex::Floats(inputs[j].get(), {kBatch, kIn}));
  for (int j = 0; j < 5; ++j) ys.push_back(ex::Floats(outputs[j].get(), {kBatch, kOut}));
  auto run = [&](encore::Method* m, int i) { EX_OK(m->Run({&xs[i % 8], 1}, {&ys[i % 5], 1}, stream)); };
  const std::vector<std::function<void(int)>> ways = {
      [&](int i) { EX_CUDA(Forward(mlp, inputs[i % 8].get(), ref_h1.get(), ref_h2.get(), outputs[i % 5].get(), stream)); },
      [&](int) { EX_CUDA(cudaGraphLaunch(bare, stream)); },
      [&](int i) { EX_CUDA(cudaGraphLaunch(bare_sets[i % 40], stream)); },
      [&](int i) { run(method, i); },
      [&](int i) { run(staged, i); },
      [&](int) { EX_OK(method->Run({&xs[0], 1}, {&ys[0], 1}, stream)); },
      [&](int) { EX_CUDA(cudaGraphLaunch(bare_record, stream)); },
  };
  // Batches short enough that the launch queue never fills (each call is
  // ~22 µs of GPU work), so the CPU column is submission alone.
  // Under a sanitizer each way still runs 6 calls: the staged method's 3
  // warmups, its capture and 2 replays.
  const int kTimed = ex::Rounds(100, 6);
  const int kRepeats = ex::Rounds(41, 1);
  std::vector<std::vector<double>> cpu(ways.size()), e2e(ways.size());
  for (int rep = 0; rep < kRepeats; ++rep) {
    for (size_t w = 0; w < ways.size(); ++w) {
      EX_CUDA(cudaStreamSynchronize(stream));
      const double t0 = ex::NowMicros();
      for (int i = 0; i < kTimed; ++i) ways[w](i);
      const double t1 = ex::NowMicros();
      EX_CUDA(cudaStreamSynchronize(stream));
      const double t2 = ex::NowMicros();
      cpu[w].push_back((t1 - t0) / kTimed);
      e2e[w].push_back((t2 - t0) / kTimed);
    }
  }
  EX_CUDA(cudaGraphExecDestroy(bare));
  EX_CUDA(cudaGraphExecDestroy(bare_record));
  EX_CUDA(cudaEventDestroy(done));
  for (cudaGraphExec_t e : bare_sets) EX_CUDA(cudaGraphExecDestroy(e));
  ex::Expect(staged->Report().binding == encore::Binding::kStaged && staged->Report().replays > 0,
             "the staged method did not replay a staged graph");
  const char* names[] = {"eager: 3 kernel launches", "bare graph, fixed buffers (by hand)",
                         "bare graphs, one per address set (by hand)", nullptr,
                         "encore, binding=staged (graph replay)", nullptr,
                         "bare graph + event record node, fixed (by hand)"};
  const std::string direct_name =
      "encore, binding=" + std::string(encore::BindingName(method->Report().binding)) + " (graph replay)";
  names[3] = direct_name.c_str();
  const std::string fixed_name =
      "encore, binding=" + std::string(encore::BindingName(method->Report().binding)) + ", fixed buffers";
  names[5] = fixed_name.c_str();
  std::printf("\ntime per call, median of %d x %d calls, ways taking turns   CPU submit us   end-to-end us\n",
              kRepeats, kTimed);
  for (size_t w = 0; w < ways.size(); ++w) {
    std::printf("  %-44s %16.2f %15.2f\n", names[w], Median(cpu[w]), Median(e2e[w]));
  }
  std::printf("encore (%s) against the bare graph: CPU %.2fx on fixed buffers, %.2fx with buffers moving (against "
              "one bare graph per address set; %.2fx against the fixed one); end to end %.2fx; against eager end to "
              "end %.2fx\n",
              std::string(encore::BindingName(method->Report().binding)).c_str(), Median(cpu[5]) / Median(cpu[1]),
              Median(cpu[3]) / Median(cpu[2]), Median(cpu[3]) / Median(cpu[1]), Median(e2e[3]) / Median(e2e[1]),
              Median(e2e[3]) / Median(e2e[0]));
  std::printf("encore (%s) on fixed buffers against the bare graph with the same completion record node: CPU "
              "%.2fx\n",
              std::string(encore::BindingName(method->Report().binding)).c_str(), Median(cpu[5]) / Median(cpu[6]));
  std::printf("CPU submit time is what the graph saves. End-to-end time is set by the GPU work, which a graph\n"
              "does not shorten; a staged graph adds a staging copy in and one out, a direct one launches the\n"
              "executable bound to the call's buffers (8 inputs and 5 outputs taking turns: 40 address sets).\n");

  std::printf("\nreport (Manager::ReportJson() as JSON; tools/encore_report.py renders that for every method):\n");
  ex::PrintReport(*method);
  EX_CUDA(cudaStreamSynchronize(stream));
  EX_CUDA(cudaStreamDestroy(stream));
  std::printf("quickstart: OK\n");
  return 0;
}
