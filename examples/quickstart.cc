// SPDX-License-Identifier: Apache-2.0
// quickstart: register a method with encore's Manager, call it, and read its
// report.
//
// The method is a small MLP (examples/quickstart_mlp.h). encore runs it
// eagerly for its first 3 calls, captures it into a CUDA graph on the 4th and
// replays the graph after that, while the caller's input and output buffers
// move every call. Each output is compared bit for bit with the same kernels
// launched by hand. bench/quickstart_bench.cc times the same method.
//
//   bazel run //examples:quickstart      (or ./run_example)
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_util.h"
#include "encore/examples/quickstart_mlp.h"

namespace ex = encore::examples;

int main() {
  if (int rc = ex::RequireGpu("quickstart")) return rc;  // no GPU: says so, exits 77
  cudaStream_t stream;
  EX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937 rng(7);
  const ex::Mlp mlp(rng);

  // 1. A manager, and the method registered with it.
  auto manager = EX_OK(encore::Manager::Create());
  encore::Method* method = EX_OK(manager->Register(ex::MlpSpec(mlp, "mlp")));

  // Inputs and outputs live in several buffers, so addresses change per call.
  std::vector<ex::DeviceArray<float>> inputs, outputs;
  for (int i = 0; i < 8; ++i) {
    inputs.emplace_back(ex::kBatch * ex::kIn);
    inputs.back().Upload(ex::Random(ex::kBatch * ex::kIn, 1.0f, rng));
  }
  for (int i = 0; i < 5; ++i) outputs.emplace_back(ex::kBatch * ex::kOut);
  ex::DeviceArray<float> ref(ex::kBatch * ex::kOut), h1(ex::kBatch * ex::kHidden), h2(ex::kBatch * ex::kHidden);

  // 2. Calls: 3 eager warmups, a capture, then replays (under a sanitizer 10
  // calls, enough for all three). Each is checked against eager launches.
  const int kCalls = ex::Rounds(100, 10);
  int equal = 0;
  for (int i = 0; i < kCalls; ++i) {
    const ex::DeviceArray<float>& in = inputs[i % inputs.size()];
    const ex::DeviceArray<float>& out = outputs[i % outputs.size()];
    encore::TensorRef x = ex::Floats(in.get(), {ex::kBatch, ex::kIn});
    encore::TensorRef y = ex::Floats(out.get(), {ex::kBatch, ex::kOut});
    EX_OK(method->Run({&x, 1}, {&y, 1}, stream));

    EX_CUDA(ex::Forward(mlp, in.get(), h1.get(), h2.get(), ref.get(), stream));
    std::vector<float> got = out.Download(stream), want = ref.Download(stream);
    if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0) {
      ++equal;
    } else {
      std::printf("call %d: output differs from the eager reference\n", i + 1);
    }
  }

  // 3. What happened, from the method's report.
  const encore::MethodReport r = method->Report();
  std::printf("quickstart: MLP %d-%d-%d-%d, batch %d, 3 kernels per call\n", ex::kIn, ex::kHidden, ex::kHidden,
              ex::kOut, ex::kBatch);
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
  std::printf("\nreport (Manager::ReportJson() as JSON; tools/encore_report.py renders that for every method):\n");
  ex::PrintReport(*method);
  EX_CUDA(cudaStreamDestroy(stream));
  std::printf("quickstart: OK\n");
  return 0;
}
