// SPDX-License-Identifier: Apache-2.0
// fallback: a method that cannot be captured.
//
// The method divides the positive entries of x by how many there are. It
// counts them with encore::shims::CountNonzero, which reads the count back to
// the host: a graph cannot record that, so inside a capture the shim refuses.
// encore ends the capture cleanly, logs `event=capture_failed ...
// expected=true` at info, runs the same call eagerly, and keeps the method
// eager from then on. Every result is still right.
//
//   bazel run //examples:fallback
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"

namespace ex = encore::examples;
using ex::DeviceArray;

constexpr int kN = 1000;

// y[i] = x[i] / (number of positive x) where x[i] > 0, else 0.
encore::Status NormalizePositive(encore::Call& call) {
  const float* x = static_cast<const float*>(call.input(0).data);
  float* y = static_cast<float*>(call.output(0).data);
  const int64_t n = call.input(0).numel();
  ENCORE_ASSIGN_OR_RETURN(void* mask, call.Allocate(n));
  ENCORE_RETURN_IF_ERROR(encore::CudaStatus(ex::LaunchPositiveMask(x, static_cast<bool*>(mask), n, call.stream()), "mask"));
  // A host readback: refuses (IsCaptureRefusal) inside a capture.
  ENCORE_ASSIGN_OR_RETURN(int64_t count, encore::shims::CountNonzero(static_cast<bool*>(mask), n, call.stream()));
  if (count == 0) return encore::CudaStatus(cudaMemsetAsync(y, 0, n * sizeof(float), call.stream()), "zero fill");
  return encore::CudaStatus(ex::LaunchDivideMasked(x, static_cast<bool*>(mask), count, y, n, call.stream()), "divide");
}

int main() {
  if (int rc = ex::RequireGpu("fallback")) return rc;
  cudaStream_t stream;
  EX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  ex::KeptLog log;  // prints to stderr and keeps the lines to show them below
  encore::ManagerOptions options;
  options.logger = log.logger();
  auto manager = EX_OK(encore::Manager::Create(options));
  encore::MethodSpec spec;
  spec.name = "normalize_positive";
  spec.fn = NormalizePositive;
  spec.constants = std::vector<encore::Constant>{};  // none
  encore::Method* method = EX_OK(manager->Register(std::move(spec)));

  std::mt19937 rng(3);
  DeviceArray<float> x(kN), y(kN);
  constexpr int kCalls = 12;
  int right = 0;
  for (int call = 1; call <= kCalls; ++call) {
    // A different share of positive entries each call; none at all in call 8.
    std::uniform_real_distribution<float> u(-1.0f, call == 8 ? 0.0f : static_cast<float>(call) / 4);
    std::vector<float> h(kN);
    for (float& v : h) v = u(rng);
    x.Upload(h);
    encore::TensorRef in = ex::Floats(x.get(), {kN}), out = ex::Floats(y.get(), {kN});
    EX_OK(method->Run({&in, 1}, {&out, 1}, stream));

    int64_t count = 0;
    for (float v : h) count += v > 0.0f;
    std::vector<float> got = y.Download(stream);
    bool ok = true;
    for (int i = 0; i < kN; ++i) {
      float want = h[i] > 0.0f ? h[i] / static_cast<float>(count) : 0.0f;
      ok = ok && std::fabs(got[i] - want) <= 1e-6f * std::fabs(want);
    }
    right += ok;
    std::printf("call %2d: %4lld positive of %d, result %s\n", call, static_cast<long long>(count), kN,
                ok ? "right" : "WRONG");
  }

  std::printf("\nthe capture attempt, as encore logged it:\n");
  for (const std::string& line : log.Find({"event=capture_failed", "method=normalize_positive"})) {
    std::printf("  %s\n", line.c_str());
  }
  for (const std::string& line : log.Find({"event=graphs_off", "method=normalize_positive"})) {
    std::printf("  %s\n", line.c_str());
  }
  encore::MethodReport r = method->Report();
  std::printf("\nreport: %s\n", r.ToJson().c_str());

  ex::Expect(right == kCalls, "some results are wrong");
  ex::Expect(!log.Find({"event=capture_failed", "expected=true"}).empty(),
             "no info line event=capture_failed ... expected=true");
  ex::Expect(r.capture_failures == 1 && r.captures == 0 && r.phase == encore::MethodPhase::kEager &&
                 r.eager_calls == kCalls - 3 && !r.graphs_off_reason.empty(),
             "expected 3 warmup calls, one failed capture and eager calls after it");
  EX_CUDA(cudaStreamDestroy(stream));
  std::printf("fallback: OK\n");
  return 0;
}
