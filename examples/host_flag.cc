// SPDX-License-Identifier: Apache-2.0
// host_flag: a method that branches on a flag kept in host memory.
//
// Host code runs only while a graph is captured, so a graph would keep the
// branch of its capture call forever. Listing the flag as a constant lets
// encore see (with cudaPointerGetAttributes) that it lives in pinned host
// memory: it logs the constant's name and runs the method eagerly, so every
// call follows the flag. For contrast, the same method registered without the
// flag in its list is captured, and its replays ignore the flag.
//
//   bazel run //examples:host_flag
#include <cstdio>
#include <cstring>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_util.h"
#include "encore/tests/test_kernels.h"

namespace ex = encore::examples;
using ex::DeviceArray;
using encore::testing::LaunchAffine;

constexpr int kN = 256;

int main() {
  if (int rc = ex::RequireGpu("host_flag")) return rc;
  cudaStream_t stream;
  EX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  int* use_scale = nullptr;  // the host flag, in pinned host memory
  EX_CUDA(cudaMallocHost(reinterpret_cast<void**>(&use_scale), sizeof(int)));
  *use_scale = 0;
  // y = 2x when the flag is set, else y = x + 1.
  auto scale_or_shift = [use_scale](encore::Call& call) {
    const float* x = static_cast<const float*>(call.input(0).data);
    float* y = static_cast<float*>(call.output(0).data);
    cudaError_t e = *use_scale ? LaunchAffine(x, y, 2.0f, 0.0f, kN, call.stream())
                               : LaunchAffine(x, y, 1.0f, 1.0f, kN, call.stream());
    return encore::CudaStatus(e, "affine");
  };

  ex::KeptLog log;
  encore::ManagerOptions options;
  options.logger = log.logger();
  auto manager = EX_OK(encore::Manager::Create(options));
  encore::MethodSpec spec{"scale_or_shift", scale_or_shift,
                          std::vector<encore::Constant>{{"use_scale", use_scale, sizeof(int)}}, std::nullopt};
  encore::Method* listed = EX_OK(manager->Register(spec));
  spec.name = "scale_or_shift_unlisted";
  spec.constants = std::vector<encore::Constant>{};  // claims no host-side state: wrong
  encore::Method* unlisted = EX_OK(manager->Register(spec));

  DeviceArray<float> x(kN), y(kN), y_unlisted(kN), ref(kN);
  std::vector<float> h(kN);
  for (int i = 0; i < kN; ++i) h[i] = static_cast<float>(i) - 100.0f;
  x.Upload(h);
  encore::TensorRef in = ex::Floats(x.get(), {kN});
  constexpr int kCalls = 12;
  int equal = 0, unlisted_wrong = 0;
  for (int call = 1; call <= kCalls; ++call) {
    *use_scale = call % 3 == 0;  // the host flips the flag between calls
    encore::TensorRef out = ex::Floats(y.get(), {kN}), out2 = ex::Floats(y_unlisted.get(), {kN});
    EX_OK(listed->Run({&in, 1}, {&out, 1}, stream));
    EX_OK(unlisted->Run({&in, 1}, {&out2, 1}, stream));
    // The eager reference.
    EX_CUDA(*use_scale ? LaunchAffine(x.get(), ref.get(), 2.0f, 0.0f, kN, stream)
                       : LaunchAffine(x.get(), ref.get(), 1.0f, 1.0f, kN, stream));
    std::vector<float> a = y.Download(stream), b = y_unlisted.Download(stream), want = ref.Download(stream);
    bool same = std::memcmp(a.data(), want.data(), sizeof(float) * kN) == 0;
    bool same_unlisted = std::memcmp(b.data(), want.data(), sizeof(float) * kN) == 0;
    equal += same;
    unlisted_wrong += !same_unlisted;
    std::printf("call %2d: flag=%d  listed: %s   unlisted: %s\n", call, *use_scale, same ? "equal to eager" : "DIFFERENT",
                same_unlisted ? "equal to eager" : "different (the graph kept the capture call's branch)");
  }

  std::printf("\nwhat encore logged about the flag:\n");
  for (const std::string& line : log.Find({"event=host_constant"})) std::printf("  %s\n", line.c_str());
  encore::MethodReport r = listed->Report();
  std::printf("\nreport (listed): %s\n", r.ToJson().c_str());
  std::printf("without the flag listed, %d of %d calls were wrong\n", unlisted_wrong, kCalls);

  ex::Expect(equal == kCalls, "scale_or_shift: results differ from eager");
  ex::Expect(!log.Find({"event=host_constant", "method=scale_or_shift", "constant=use_scale"}).empty(),
             "no log line names the constant use_scale");
  ex::Expect(r.captures == 0 && r.phase == encore::MethodPhase::kEager &&
                 r.graphs_off_reason.find("use_scale") != std::string::npos,
             "scale_or_shift: expected no graph and a reason naming use_scale");
  EX_CUDA(cudaStreamSynchronize(stream));
  EX_CUDA(cudaFreeHost(use_scale));
  EX_CUDA(cudaStreamDestroy(stream));
  std::printf("host_flag: OK\n");
  return 0;
}
