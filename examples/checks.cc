// SPDX-License-Identifier: Apache-2.0
// checks: a device-side check that does not kill the process.
//
// The method turns logits into probabilities (a softmax per row) and checks,
// on the device and without a host sync, that every row sums to 1 within
// 1e-4. With checks=record a failed check is recorded on the device; the
// method's next Run (or Synchronize) returns FailedPrecondition naming the
// method, the check's message and the call that failed, that Run does nothing,
// and the calls after it work as before. A NaN in the input makes a bad call.
//
//   bazel run //examples:checks
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"

namespace ex = encore::examples;
using ex::DeviceArray;

constexpr int kRows = 8, kCols = 16;
constexpr char kMessage[] = "rows of p sum to 1 within 1e-4";

encore::Status Probabilities(encore::Call& call) {
  const float* x = static_cast<const float*>(call.input(0).data);
  float* p = static_cast<float*>(call.output(0).data);
  ENCORE_RETURN_IF_ERROR(encore::CudaStatus(ex::LaunchSoftmaxRows(x, p, kRows, kCols, call.stream()), "softmax"));
  ENCORE_ASSIGN_OR_RETURN(void* ok, call.Allocate(sizeof(bool)));
  ENCORE_RETURN_IF_ERROR(
      encore::CudaStatus(ex::LaunchRowsSumToOne(p, kRows, kCols, 1e-4f, static_cast<bool*>(ok), call.stream()), "sums"));
  return call.Check(static_cast<const bool*>(ok), kMessage);
}

int main() {
  if (int rc = ex::RequireGpu("checks")) return rc;
  cudaStream_t stream;
  EX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto manager = EX_OK(encore::Manager::Create());
  encore::MethodFlags flags;
  flags.checks = encore::CheckMode::kRecord;  // the default, spelled out
  encore::MethodSpec spec{"probabilities", Probabilities, std::vector<encore::Constant>{}, flags};
  encore::Method* method = EX_OK(manager->Register(std::move(spec)));

  std::mt19937 rng(5);
  std::normal_distribution<float> logit(0.0f, 2.0f);
  DeviceArray<float> x(kRows * kCols), p(kRows * kCols), ref(kRows * kCols);
  int good_calls = 0, good_equal = 0, reported = 0;

  // Runs one call; `bad` puts a NaN into row 2. Returns the Run's status.
  auto call = [&](bool bad) {
    std::vector<float> h(kRows * kCols);
    for (float& v : h) v = logit(rng);
    if (bad) h[2 * kCols + 5] = NAN;
    x.Upload(h);
    encore::TensorRef in = ex::Floats(x.get(), {kRows, kCols}), out = ex::Floats(p.get(), {kRows, kCols});
    encore::Status s = method->Run({&in, 1}, {&out, 1}, stream);
    if (s.ok() && !bad) {  // compare with the softmax launched eagerly
      EX_CUDA(ex::LaunchSoftmaxRows(x.get(), ref.get(), kRows, kCols, stream));
      std::vector<float> got = p.Download(stream), want = ref.Download(stream);
      ++good_calls;
      good_equal += std::memcmp(got.data(), want.data(), sizeof(float) * got.size()) == 0;
    }
    EX_CUDA(cudaStreamSynchronize(stream));
    return s;
  };
  // A failure report must be FailedPrecondition naming the method, the
  // message and the bad call.
  auto expect_report = [&](const encore::Status& s, int64_t bad_call, const char* how) {
    std::printf("  %s returned: %s\n", how, s.ToString().c_str());
    std::string msg(s.message());
    ex::Expect(s.code() == encore::StatusCode::kFailedPrecondition, "expected FailedPrecondition");
    ex::Expect(msg.find("probabilities") != std::string::npos, "the report does not name the method");
    ex::Expect(msg.find(kMessage) != std::string::npos, "the report does not quote the check's message");
    ex::Expect(msg.find("call " + std::to_string(bad_call)) != std::string::npos,
               "the report does not name call " + std::to_string(bad_call));
    ++reported;
  };

  for (int i = 0; i < 5; ++i) EX_OK(call(false));  // 3 warmup calls, capture, replay
  std::printf("calls 1-5 good (phase now %s)\n", std::string(encore::MethodPhaseName(method->Report().phase)).c_str());

  EX_OK(call(true));  // the NaN: Run itself returns OK, the check fails on the device
  int64_t bad = method->Report().calls;
  std::printf("call %lld: a NaN in the input; Run returned OK (the check runs on the device)\n", (long long)bad);
  expect_report(call(false), bad, "the next Run");
  EX_OK(call(false));  // and the method carries on
  EX_OK(call(false));
  std::printf("the two calls after it: OK\n");

  EX_OK(call(true));
  bad = method->Report().calls;
  std::printf("call %lld: another NaN\n", (long long)bad);
  expect_report(method->Synchronize(stream), bad, "Synchronize");
  for (int i = 0; i < 5; ++i) EX_OK(call(false));
  std::printf("five more good calls: OK\n");

  encore::MethodReport r = method->Report();
  std::printf("\n%d/%d good calls equal to the eager softmax bit for bit\n", good_equal, good_calls);
  std::printf("report: %s\n", r.ToJson().c_str());
  ex::Expect(good_equal == good_calls, "good calls differ from the eager softmax");
  ex::Expect(reported == 2 && r.check_failures == 2, "expected 2 check failures reported");
  ex::Expect(r.captures == 1 && r.replays > 0, "expected the method to stay on its graph");
  EX_CUDA(cudaStreamDestroy(stream));
  std::printf("checks: OK\n");
  return 0;
}
