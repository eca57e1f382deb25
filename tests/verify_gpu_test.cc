// SPDX-License-Identifier: Apache-2.0
// Verification (MethodFlags::verify, verify_every, verify_tolerance): a
// correct method passes and computes what it would without verification
// (Philox included); a graph that bakes in a host scalar, a body that
// branches on a host counter and a body that launches on a stream it never
// joins are each caught, answered with the eager result, and graphs go off.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/graph/manager.h"
#include "encore/shims/philox.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/manager_fixture.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kN = 256;

class VerifyTest : public testing::GpuManagerTest {
 protected:
  ManagerOptions Options() override {
    ManagerOptions o = GpuManagerTest::Options();
    o.flags_text = "*:warmup=1";
    return o;
  }

  Method* Register(std::string name, MethodFn fn, MethodFlags flags) {
    MethodSpec spec;
    spec.name = std::move(name);
    spec.fn = std::move(fn);
    spec.constants = std::vector<Constant>{};
    flags.warmup_calls = 1;
    spec.flags = flags;
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  // Runs `m` on in = {call, call+1, ...}; returns output 0.
  std::vector<float> RunOnce(Method* m, int call, int outputs = 1) {
    std::vector<float> v(kN);
    for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(call + i);
    in_.Upload(v);
    TensorRef ins[] = {{in_.get(), DType::kFloat32, {kN}, {}}};
    TensorRef outs[] = {{out_.get(), DType::kFloat32, {kN}, {}}, {out2_.get(), DType::kFloat32, {kN}, {}}};
    Status st = m->Run(ins, {outs, static_cast<size_t>(outputs)}, s());
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    return out_.Download();
  }

  DeviceBuffer<float> in_{kN}, out_{kN}, out2_{kN};
};

// Output 0 = input, and output 1 = input + 100 written on `side`, a stream
// the body never joins to the call's: a capture does not record that launch,
// and CUDA cannot tell (docs/limitations.md).
MethodFn SideStreamBody(cudaStream_t side) {
  return [side](Call& c) -> Status {
    ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 1.0f, 0.0f));
    cudaError_t e = testing::LaunchAffine(static_cast<const float*>(c.input(0).data),
                                          static_cast<float*>(c.output(1).data), 1.0f, 100.0f, kN, side);
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "side launch");
  };
}

// Like SideStreamBody, but the graph writes output 1 on the call's stream
// (+100) while eager calls write it on `side` (+200): no capture check can
// see it; verification does, and must wait for `side` to see it whole.
MethodFn EagerSideStreamBody(cudaStream_t side) {
  return [side](Call& c) -> Status {
    ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 1.0f, 0.0f));
    const bool captured = c.kind() == CallKind::kCapture;
    cudaError_t e = testing::LaunchAffine(static_cast<const float*>(c.input(0).data),
                                          static_cast<float*>(c.output(1).data), 1.0f, captured ? 100.0f : 200.0f,
                                          kN, captured ? c.stream() : side);
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "side launch");
  };
}

MethodFlags Verify(int n, int every = 0, double tol = 0) {
  MethodFlags f;
  f.verify = n;
  f.verify_every = every;
  f.verify_tolerance = tol;
  return f;
}

// The capture launch is verified after the capture is booked: its eager
// re-run already sees the captured line.
TEST_F(VerifyTest, TheCaptureLaunchIsVerifiedAfterTheCaptureIsBooked) {
  int eager_runs = 0, captured_seen = -1;
  Method* m = Register("booked_first", [&](Call& c) -> Status {
    if (c.kind() == CallKind::kEager && ++eager_runs == 1) captured_seen = logs_.Count("captured");
    return testing::AffineCall(c, 2.0f, 1.0f);
  }, Verify(1));
  for (int call = 1; call <= 3; ++call) EXPECT_EQ(RunOnce(m, call)[5], 2.0f * (call + 5) + 1.0f) << call;
  EXPECT_EQ(eager_runs, 2);  // the re-runs of the capture launch and of the first replay
  EXPECT_EQ(captured_seen, 1);
  EXPECT_EQ(m->Report().verified_launches, 2);
}

TEST_F(VerifyTest, ACorrectMethodPassesAndIsCounted) {
  Method* m = Register("affine", [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); }, Verify(3));
  for (int call = 1; call <= 7; ++call) {
    std::vector<float> out = RunOnce(m, call);
    EXPECT_EQ(out[5], 2.0f * (call + 5) + 1.0f) << call;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kReplay) << r.graphs_off_reason;
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 5);
  // The capture launch (call 2) and the first three replays (calls 3-5).
  EXPECT_EQ(r.verified_launches, 4);
  EXPECT_EQ(r.verify_failures, 0);
  EXPECT_EQ(logs_.Count("verify_failed"), 0);
  EXPECT_NE(mgr_->ReportJson().find("\"verified_launches\":4"), std::string::npos) << mgr_->ReportJson();
}

TEST_F(VerifyTest, WithoutOutputCopiesTheStaticOutputsAreChecked) {
  MethodFlags f = Verify(2);
  f.copy_outputs = false;
  float scale = 2.0f;
  Method* m = Register("static_out", [&](Call& c) { return testing::AffineCall(c, scale, 0.0f); }, f);
  for (int call = 1; call <= 3; ++call) RunOnce(m, call);
  MethodReport r = m->Report();
  EXPECT_EQ(r.verified_launches, 2);
  EXPECT_EQ(r.verify_failures, 0) << r.graphs_off_reason;
  ASSERT_EQ(r.static_outputs.size(), 1u);
  scale = 5.0f;
  RunOnce(m, 4);
  r = m->Report();
  EXPECT_EQ(r.verify_failures, 1);
  EXPECT_EQ(r.graphs_off_reason, "verify: output 0 element 0: graph 8, eager 20 (call 4)");
}

TEST_F(VerifyTest, VerifyEveryChecksEveryMthReplay) {
  Method* m = Register("every", [](Call& c) { return testing::AffineCall(c, 1.0f, 1.0f); }, Verify(0, 2));
  for (int call = 1; call <= 8; ++call) RunOnce(m, call);
  MethodReport r = m->Report();
  EXPECT_EQ(r.replays, 6);
  EXPECT_EQ(r.verified_launches, 3);  // replays 2, 4, 6
  EXPECT_EQ(r.verify_failures, 0);
}

TEST_F(VerifyTest, AHostScalarBakedIntoAKernelArgumentIsCaught) {
  float scale = 2.0f;
  Method* m = Register("scaled", [&](Call& c) { return testing::AffineCall(c, scale, 0.0f); }, Verify(3));
  RunOnce(m, 1);
  RunOnce(m, 2);  // captured with scale 2
  scale = 3.0f;
  std::vector<float> out = RunOnce(m, 3);
  // The eager result, not the graph's.
  EXPECT_EQ(out[1], 3.0f * 4);
  MethodReport r = m->Report();
  EXPECT_EQ(r.verify_failures, 1);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_EQ(r.graphs_off_reason, "verify: output 0 element 0: graph 6, eager 9 (call 3)");
  auto ev = logs_.Named("verify_failed");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].level, spdlog::level::warn);
  EXPECT_EQ(RunOnce(m, 4)[0], 12.0f);  // eager from now on
}

TEST_F(VerifyTest, ABodyBranchingOnAHostCounterIsCaught) {
  int calls = 0;
  Method* m = Register("branchy",
                       [&](Call& c) {
                         ++calls;
                         return testing::AffineCall(c, calls % 2 ? 1.0f : -1.0f, 0.0f);
                       },
                       Verify(0, 1));
  RunOnce(m, 1);
  RunOnce(m, 2);  // captured on an even count: a = -1
  std::vector<float> out = RunOnce(m, 3);  // the eager re-run runs on an odd count
  MethodReport r = m->Report();
  EXPECT_EQ(r.verify_failures, 1);
  EXPECT_EQ(r.graphs_off_reason.rfind("verify: output 0 element 0: graph -3, eager 3", 0), 0u)
      << r.graphs_off_reason;
  EXPECT_EQ(out[0], 3.0f);
}

TEST_F(VerifyTest, AnUnjoinedSecondStreamIsCaught) {
  // Caught at its capture now, before verification could see it: no node of
  // the graph writes output 1, yet its static buffer changed while captured.
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  Method* m = Register("sidestream", SideStreamBody(side), Verify(1));
  RunOnce(m, 1, 2);
  RunOnce(m, 2, 2);
  RunOnce(m, 3, 2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_NE(r.graphs_off_reason.find("output 1 outside the capture"), std::string::npos) << r.graphs_off_reason;
  EXPECT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  EXPECT_EQ(out2_.Download()[7], 3.0f + 7 + 100.0f);  // the last call's eager result
  cudaStreamDestroy(side);
}

TEST_F(VerifyTest, PhiloxUnderVerifyDrawsWhatItDrawsWithout) {
  auto gen = shims::Philox::Create(99);
  auto ref = shims::Philox::Create(99);
  ASSERT_TRUE(gen.ok() && ref.ok());
  Method* m = Register("noise",
                       [&](Call& c) { return gen->Uniform(static_cast<float*>(c.output(0).data), kN, c.stream()); },
                       Verify(3));
  DeviceBuffer<float> expected(kN);
  for (int call = 1; call <= 6; ++call) {
    std::vector<float> got = RunOnce(m, call);
    ASSERT_TRUE(ref->Uniform(expected.get(), kN, s()).ok());
    ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    EXPECT_EQ(got, expected.Download()) << call;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kReplay) << r.graphs_off_reason;
  EXPECT_EQ(r.verified_launches, 4);
  EXPECT_EQ(r.verify_failures, 0);
  EXPECT_EQ(*gen->Offset(s()), *ref->Offset(s()));
}

TEST_F(VerifyTest, ToleranceAcceptsSmallDifferencesOnly) {
  float scale = 1.0f;
  Method* loose = Register("loose", [&](Call& c) { return testing::AffineCall(c, scale, 0.0f); }, Verify(5, 0, 1e-5));
  RunOnce(loose, 1);
  RunOnce(loose, 2);
  scale = 1.0f + 1e-6f;
  RunOnce(loose, 3);
  EXPECT_EQ(loose->Report().verify_failures, 0) << loose->Report().graphs_off_reason;
  EXPECT_EQ(loose->Report().verified_launches, 2);
  scale = 1.0f;
  Method* strict = Register("strict", [&](Call& c) { return testing::AffineCall(c, scale, 0.0f); }, Verify(5));
  RunOnce(strict, 1);
  RunOnce(strict, 2);
  scale = 1.0f + 1e-6f;
  RunOnce(strict, 3);
  EXPECT_EQ(strict->Report().verify_failures, 1);
}

TEST_F(VerifyTest, WritesToAListedConstantAreNotAppliedTwice) {
  DeviceBuffer<float> counter(1);
  counter.Fill(0.0f);
  MethodSpec spec;
  spec.name = "accumulate";
  spec.constants = std::vector<Constant>{{"counter", counter.get(), sizeof(float)}};
  MethodFlags f = Verify(3);
  f.warmup_calls = 1;
  spec.flags = f;
  // counter += 1 per call (a float counter: IncrementK adds 1), out = in.
  spec.fn = [&](Call& c) -> Status {
    ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 1.0f, 0.0f));
    cudaError_t e = testing::LaunchIncrementK(counter.get(), 1, 1, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "IncrementK");
  };
  Method* m = *mgr_->Register(spec);
  for (int call = 1; call <= 6; ++call) RunOnce(m, call);
  EXPECT_EQ(counter.Download()[0], 6.0f);
  EXPECT_EQ(m->Report().verified_launches, 4);
  EXPECT_EQ(m->Report().verify_failures, 0);
}

TEST_F(VerifyTest, AMethodThatCannotListItsConstantsIsNotVerified) {
  MethodSpec spec;
  spec.name = "unlisted";
  spec.fn = [](Call& c) { return testing::AffineCall(c, 1.0f, 0.0f); };
  MethodFlags f = Verify(3);
  f.warmup_calls = 1;
  spec.flags = f;
  Method* m = *mgr_->Register(spec);
  for (int call = 1; call <= 4; ++call) RunOnce(m, call);
  EXPECT_EQ(m->Report().verified_launches, 0);
  EXPECT_EQ(m->Report().phase, MethodPhase::kReplay);
  EXPECT_EQ(logs_.Count("verify_refused"), 1);
}

// A method whose capturing call (its second: warmup=1) waits inside the
// capture until `release`, on a thread and stream of its own.
struct SlowCapture {
  std::atomic<int> calls{0};
  std::promise<void> in_capture;
  std::shared_future<void> release;
};

// Verification syncs the whole device after its eager re-run; CUDA refuses
// that while any thread captures, and invalidates the capture. It waits for
// encore's captures on other threads (docs/design.md, Verification).
class VerifyBesideCaptureTest : public VerifyTest {
 protected:
  // Runs `a` for `calls_before` calls, then once more (input all 4.0) while
  // another method's capture on another thread lasts `capture_lasts`.
  Status RunBesideACapture(Method* a, int calls_before, int outputs, std::chrono::milliseconds capture_lasts,
                           MethodReport* b_report) {
    auto slow = std::make_shared<SlowCapture>();
    std::promise<void> release;
    slow->release = release.get_future().share();
    Method* b = Register("slow_capture",
                         [slow](Call& c) -> Status {
                           if (++slow->calls == 2) {
                             slow->in_capture.set_value();
                             slow->release.wait();
                           }
                           return testing::AffineCall(c, 3.0f, 0.0f);
                         },
                         MethodFlags{});
    if (a == nullptr || b == nullptr) return InternalError("register failed");
    for (int call = 1; call <= calls_before; ++call) RunOnce(a, call, outputs);
    DeviceBuffer<float> bin(kN), bout(kN);
    bin.Fill(1.0f);
    // Before b captures: Upload syncs the device, which would break that.
    in_.Upload(std::vector<float>(kN, 4.0f));
    cudaStream_t bs = nullptr;
    EXPECT_EQ(cudaStreamCreateWithFlags(&bs, cudaStreamNonBlocking), cudaSuccess);
    std::future<void> in_capture = slow->in_capture.get_future();
    std::thread capturer([&] {
      TensorRef i{bin.get(), DType::kFloat32, {kN}, {}}, o{bout.get(), DType::kFloat32, {kN}, {}};
      for (int call = 0; call < 3; ++call) EXPECT_TRUE(b->Run({&i, 1}, {&o, 1}, bs).ok());
    });
    in_capture.wait();
    std::thread releaser([&] {
      std::this_thread::sleep_for(capture_lasts);
      release.set_value();
    });
    TensorRef ins[] = {{in_.get(), DType::kFloat32, {kN}, {}}};
    TensorRef outs[] = {{out_.get(), DType::kFloat32, {kN}, {}}, {out2_.get(), DType::kFloat32, {kN}, {}}};
    Status st = a->Run(ins, {outs, static_cast<size_t>(outputs)}, s());  // while b captures
    releaser.join();
    capturer.join();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(bout.Download(), std::vector<float>(kN, 3.0f));
    *b_report = b->Report();
    EXPECT_EQ(b_report->captures, 1);
    EXPECT_EQ(b_report->capture_failures, 0);
    EXPECT_EQ(b_report->phase, MethodPhase::kReplay) << b_report->graphs_off_reason;
    cudaStreamDestroy(bs);
    return st;
  }

  // After RunBesideACapture of 2 * x + 1 on x = 4: right and verified
  // (the capture launch and this replay), and logged as stream-only or not.
  void ExpectAffineVerified(Method* a, const Status& st, int stream_only_logs) {
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(out_.Download(), std::vector<float>(kN, 9.0f));
    EXPECT_EQ(a->Report().verified_launches, 2);
    EXPECT_EQ(a->Report().verify_failures, 0) << a->Report().graphs_off_reason;
    EXPECT_EQ(logs_.Count("verify_stream_only"), stream_only_logs);
  }
};

TEST_F(VerifyBesideCaptureTest, AVerifiedReplayWaitsForAnotherThreadsCapture) {
  Method* a = Register("verified", [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); }, Verify(100));
  MethodReport rb;
  Status st = RunBesideACapture(a, 2, 1, std::chrono::milliseconds(100), &rb);
  ExpectAffineVerified(a, st, /*stream_only_logs=*/0);
}

TEST_F(VerifyBesideCaptureTest, ACaptureLongerThanThePatienceGetsAStreamSyncInstead) {
  Method* a = Register("verified", [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); }, Verify(100));
  MethodReport rb;
  Status st = RunBesideACapture(a, 2, 1, std::chrono::milliseconds(1500), &rb);
  ExpectAffineVerified(a, st, /*stream_only_logs=*/1);
}

TEST_F(VerifyBesideCaptureTest, ADifferenceSeenWithoutADeviceSyncIsCheckedAfterOne) {
  // The unjoined second stream again, verified while another thread
  // captures for longer than the patience: the difference the stream-only
  // comparison sees may be the eager run unfinished, so the comparison waits
  // for the device (the capture ends first) before it hands back the eager
  // result.
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  Method* a = Register("sidestream", EagerSideStreamBody(side), Verify(100));
  MethodReport rb;
  Status st = RunBesideACapture(a, 1, 2, std::chrono::milliseconds(1500), &rb);  // a's capture call
  EXPECT_TRUE(st.ok()) << st;
  MethodReport r = a->Report();
  EXPECT_EQ(r.verify_failures, 1);
  EXPECT_EQ(r.graphs_off_reason.rfind("verify: output 1 element", 0), 0u) << r.graphs_off_reason;
  EXPECT_EQ(logs_.Count("verify_stream_only"), 0);
  EXPECT_EQ(out2_.Download(), std::vector<float>(kN, 204.0f));  // the eager result, whole
  cudaStreamDestroy(side);
}

}  // namespace
}  // namespace encore
