// SPDX-License-Identifier: Apache-2.0
// No silent wrong result under default flags: a body that launches its work
// on a stream it never joined to the call's is caught at its capture (which
// returns the right result, eagerly), while a body that leaves an output
// alone keeps its graph and the output; why each call ran eagerly is
// counted by reason; Precapture's failures count no eager call.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/manager.h"
#include "encore/shims/read_scalar.h"
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

class NeverSilentTest : public testing::GpuManagerTest {
 protected:
  void SetUp() override {
    GpuManagerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (side_) cudaStreamDestroy(side_);
    GpuManagerTest::TearDown();
  }

  Method* Register(const std::string& name, MethodFn fn, int warmups = 1) {
    MethodSpec spec;
    spec.name = name;
    spec.fn = std::move(fn);
    spec.constants = std::vector<Constant>{};
    MethodFlags f;
    f.warmup_calls = warmups;
    spec.flags = f;
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  // in = call + i; returns both outputs after the call (and the side stream).
  std::vector<std::vector<float>> RunOnce(Method* m, int call, int outputs = 1) {
    std::vector<float> v(kN);
    for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(call + i);
    in_.Upload(v);
    TensorRef ins[] = {{in_.get(), DType::kFloat32, {kN}, {}}};
    TensorRef outs[] = {{out_.get(), DType::kFloat32, {kN}, {}}, {out2_.get(), DType::kFloat32, {kN}, {}}};
    Status st = m->Run(ins, {outs, static_cast<size_t>(outputs)}, s());
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(side_), cudaSuccess);
    return {out_.Download(), out2_.Download()};
  }

  cudaStream_t side_ = nullptr;
  DeviceBuffer<float> in_{kN}, out_{kN}, out2_{kN};
};

TEST_F(NeverSilentTest, ABodyOnAnUnjoinedStreamIsRunEagerlyAtItsCaptureWithTheReason) {
  Method* m = Register("side", [this](Call& c) -> Status {
    cudaError_t e = testing::LaunchAffine(static_cast<const float*>(c.input(0).data),
                                          static_cast<float*>(c.output(0).data), 2.0f, 1.0f, kN, side_);
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "side");
  });
  for (int call = 1; call <= 5; ++call) {
    out_.Fill(-7.0f);
    EXPECT_EQ(RunOnce(m, call)[0][3], 2.0f * (call + 3) + 1.0f) << "call " << call;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_NE(r.graphs_off_reason.find("outside the capture"), std::string::npos) << r.graphs_off_reason;
  EXPECT_EQ(r.eager_calls, 4);
  EXPECT_EQ(r.eager_by_reason["capture_failed"], 4);
}

TEST_F(NeverSilentTest, OneOutputOnAnUnjoinedStreamIsCaughtToo) {
  Method* m = Register("half_side", [this](Call& c) -> Status {
    ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 1.0f, 0.0f));
    cudaError_t e = testing::LaunchAffine(static_cast<const float*>(c.input(0).data),
                                          static_cast<float*>(c.output(1).data), 1.0f, 100.0f, kN, side_);
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "side");
  });
  for (int call = 1; call <= 4; ++call) {
    out2_.Fill(0.0f);
    std::vector<std::vector<float>> out = RunOnce(m, call, 2);
    EXPECT_EQ(out[0][7], call + 7.0f);
    EXPECT_EQ(out[1][7], call + 107.0f) << "call " << call;
  }
  EXPECT_NE(m->Report().graphs_off_reason.find("output 1 outside the capture"), std::string::npos)
      << m->Report().graphs_off_reason;
}

TEST_F(NeverSilentTest, ABodyThatLeavesAnOutputAloneKeepsItsGraphAndTheOutput) {
  Method* m = Register("leaves_one", [](Call& c) { return testing::AffineCall(c, 3.0f, 0.0f); });
  for (int call = 1; call <= 5; ++call) {
    out2_.Fill(7.0f);
    std::vector<std::vector<float>> out = RunOnce(m, call, 2);
    EXPECT_EQ(out[0][1], 3.0f * (call + 1));
    EXPECT_EQ(out[1][9], 7.0f) << "call " << call << ": the untouched output changed";
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kReplay) << r.graphs_off_reason;
  EXPECT_EQ(r.replays, 3);
  EXPECT_EQ(r.eager_calls, 0);
}

TEST_F(NeverSilentTest, EagerCallsAreCountedByReasonAndAddUp) {
  MethodSpec spec;
  spec.name = "off";
  spec.fn = [](Call& c) { return testing::AffineCall(c, 1.0f, 0.0f); };
  MethodFlags off;
  off.graphs = false;
  spec.flags = off;
  Method* m_off = *mgr_->Register(std::move(spec));
  for (int call = 1; call <= 3; ++call) RunOnce(m_off, call);
  MethodReport r = m_off->Report();
  EXPECT_EQ(r.eager_by_reason["graphs_off"], 3);
  EXPECT_NE(mgr_->ReportJson().find("\"eager_by_reason\":{\"graphs_off\":3}"), std::string::npos) << mgr_->ReportJson();

  MethodSpec spec2;
  spec2.name = "new_shape";
  spec2.fn = [](Call& c) { return testing::AffineCall(c, 1.0f, 0.0f); };
  MethodFlags eager;
  eager.warmup_calls = 0;
  eager.on_new_shape = ShapePolicy::kEager;
  spec2.flags = eager;
  Method* m = *mgr_->Register(std::move(spec2));
  RunOnce(m, 1);
  TensorRef small_in{in_.get(), DType::kFloat32, {kN / 2}, {}}, small_out{out_.get(), DType::kFloat32, {kN / 2}, {}};
  ASSERT_TRUE(m->Run({&small_in, 1}, {&small_out, 1}, s()).ok());
  ASSERT_TRUE(m->Run({&small_in, 1}, {&small_out, 1}, s()).ok());
  r = m->Report();
  EXPECT_EQ(r.eager_calls, 2);
  EXPECT_EQ(r.eager_by_reason["new_shape"], 2);
  int64_t sum = 0;
  for (const auto& [reason, n] : r.eager_by_reason) sum += n;
  EXPECT_EQ(sum, r.eager_calls);
}

TEST_F(NeverSilentTest, APrecaptureThatFailsCountsNoEagerCall) {
  DeviceBuffer<float> scalar(1);
  scalar.Upload(std::vector<float>{2.0f});
  Method* m = Register("reads_back", [&scalar](Call& c) -> Status {
    ENCORE_ASSIGN_OR_RETURN(float v, shims::ReadScalar(scalar.get(), c.stream()));
    return testing::AffineCall(c, v, 0.0f);
  });
  TensorRef ti{in_.get(), DType::kFloat32, {kN}, {}}, to{out_.get(), DType::kFloat32, {kN}, {}};
  ASSERT_TRUE(m->Precapture({&ti, 1}, {&to, 1}, s()).ok());
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.calls, 0);
  EXPECT_EQ(r.eager_calls, 0);
  EXPECT_TRUE(r.eager_by_reason.empty());
}

// The static buffers cannot be made (out of memory before any piece is
// recorded): the call runs eagerly, but a Precapture is no call.
TEST_F(NeverSilentTest, APrecaptureThatFailsBeforeAnyPieceCountsNoEagerCall) {
  Method* m = Register("no_room", [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); });
  TensorRef ti{in_.get(), DType::kFloat32, {kN}, {}}, to{out_.get(), DType::kFloat32, {kN}, {}};
  CudaFaultInjector faults;
  faults.FailNth(CudaCall::kDriverMemCreate, 1, cudaErrorMemoryAllocation);
  Status st = m->Precapture({&ti, 1}, {&to, 1}, s());
  faults.ClearFailures();
  EXPECT_EQ(faults.Failed(CudaCall::kDriverMemCreate), 1) << st;
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1) << st;
  EXPECT_EQ(r.calls, 0);
  EXPECT_EQ(r.eager_calls, 0);
  EXPECT_TRUE(r.eager_by_reason.empty());
}

// A capture that fails before any piece turns graphs off before the call
// runs eagerly, so the body's eager run sees the method as it now is.
TEST_F(NeverSilentTest, ACallWhoseCaptureFailsBeforeAnyPieceRunsEagerlyAfterGraphsGoOff) {
  int off_lines_seen = -1;
  Method* m = Register("no_room_on_call", [&](Call& c) -> Status {
    if (c.kind() == CallKind::kEager) off_lines_seen = logs_.Count("graphs_off");
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  TensorRef ti{in_.get(), DType::kFloat32, {kN}, {}}, to{out_.get(), DType::kFloat32, {kN}, {}};
  ASSERT_TRUE(m->Run({&ti, 1}, {&to, 1}, s()).ok());  // the warmup
  CudaFaultInjector faults;
  faults.FailNth(CudaCall::kDriverMemCreate, 1, cudaErrorMemoryAllocation);
  Status st = m->Run({&ti, 1}, {&to, 1}, s());
  faults.ClearFailures();
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(faults.Failed(CudaCall::kDriverMemCreate), 1);
  EXPECT_EQ(off_lines_seen, 1);
  ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.eager_calls, 1);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
}

// The capture fails and so does its eager retry: the precapture is
// abandoned with no piece graphed (CapturePipeline::Abandon), and it still
// counts no eager call.
TEST_F(NeverSilentTest, APrecaptureWhoseEagerRetryFailsCountsNoEagerCall) {
  Method* m = Register("fails_after_warmup", [](Call& c) -> Status {
    if (c.kind() != CallKind::kWarmup) return InternalError("refused after the warmup");
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  TensorRef ti{in_.get(), DType::kFloat32, {kN}, {}}, to{out_.get(), DType::kFloat32, {kN}, {}};
  Status st = m->Precapture({&ti, 1}, {&to, 1}, s());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("refused after the warmup"), std::string_view::npos) << st;
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1) << st;
  EXPECT_FALSE(r.graphs_off_reason.empty());  // Abandon's failure path ran
  EXPECT_EQ(r.calls, 0);
  EXPECT_EQ(r.eager_calls, 0);
  EXPECT_TRUE(r.eager_by_reason.empty());
}

// Four inputs of 2^62 bytes each: their sum wraps a size_t to almost
// nothing, which would fit any budget and send the capture to allocate
// exabytes. Saturated, the reserve is over the budget and the call eager.
TEST_F(NeverSilentTest, ACaptureReserveThatWouldWrapIsOverTheBudget) {
  ManagerOptions o;
  o.logger = logs_.logger();
  o.graph_memory_budget = size_t{64} << 20;
  auto mgr = Manager::Create(std::move(o));
  ASSERT_TRUE(mgr.ok()) << mgr.status();
  MethodSpec spec;
  spec.name = "huge_inputs";
  spec.fn = [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };  // reads input 0 only
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 0;
  spec.flags = f;
  auto m = (*mgr)->Register(std::move(spec));
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(i);
  in_.Upload(v);
  const TensorRef huge{in_.get(), DType::kUInt8, {int64_t{1} << 62}, {}};
  TensorRef ins[] = {{in_.get(), DType::kFloat32, {kN}, {}}, huge, huge, huge, huge};
  TensorRef to{out_.get(), DType::kFloat32, {kN}, {}};
  Status st = (*m)->Run(ins, {&to, 1}, s());
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
  EXPECT_EQ(out_.Download()[7], 2.0f * 7 + 1.0f);
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.over_budget_calls, 1);
  EXPECT_EQ(r.capture_failures, 0) << r.graphs_off_reason;
  EXPECT_EQ(r.captures, 0);
}

TEST_F(NeverSilentTest, RecapturesAreLoggedAtMostOnceASecond) {
  MethodSpec spec;
  spec.name = "reshaping";
  spec.fn = [](Call& c) { return testing::AffineCall(c, 1.0f, 1.0f); };
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 0;
  f.on_new_shape = ShapePolicy::kRecapture;
  f.binding = Binding::kStaged;
  f.max_graphs = 1;
  spec.flags = f;
  Method* m = *mgr_->Register(std::move(spec));
  for (int call = 0; call < 40; ++call) {
    const int64_t n = call % 2 ? kN : kN / 2;
    TensorRef ti{in_.get(), DType::kFloat32, {n}, {}}, to{out_.get(), DType::kFloat32, {n}, {}};
    ASSERT_TRUE(m->Run({&ti, 1}, {&to, 1}, s()).ok());
  }
  EXPECT_EQ(m->Report().recaptures, 39);
  EXPECT_LE(logs_.Count("recaptured"), 2) << "one line per recapture";
  EXPECT_GE(logs_.Count("recaptured"), 1);
}

}  // namespace
}  // namespace encore
