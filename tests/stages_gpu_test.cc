// SPDX-License-Identifier: Apache-2.0
// Piecewise methods (MethodSpec::stages): each maximal run of non-eager
// stages is captured as one graph, eager stages run on every call between
// them (their host code too), a piece whose capture fails runs eagerly while
// the others keep their graphs, and every result equals an eager run.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/core/internal/stream.h"
#include "encore/graph/manager.h"
#include "encore/shims/read_scalar.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/manager_fixture.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kN = 256;

Status Affine(const void* in, void* out, float a, float b, cudaStream_t s) {
  cudaError_t e = testing::LaunchAffine(static_cast<const float*>(in), static_cast<float*>(out), a, b, kN, s);
  return e == cudaSuccess ? OkStatus() : CudaStatus(e, "affine");
}

class StagesTest : public testing::GpuManagerTest {
 public:

  // pre: out = 2 x; host (eager): out = out + host_b (a host value that
  // changes every call); post: out = out + 1.
  std::vector<Stage> Transformerish() {
    return {Stage{"pre", [](Call& c) { return Affine(c.input(0).data, c.output(0).data, 2.0f, 0.0f, c.stream()); }},
            Stage{"host",
                  [this](Call& c) {
                    ++host_calls_;
                    return Affine(c.output(0).data, c.output(0).data, 1.0f, static_cast<float>(host_b_), c.stream());
                  },
                  /*eager=*/true},
            Stage{"post", [](Call& c) { return Affine(c.output(0).data, c.output(0).data, 1.0f, 1.0f, c.stream()); }}};
  }

  Method* Register(const std::string& name, std::vector<Stage> stages, MethodFlags f = {}) {
    MethodSpec spec;
    spec.name = name;
    spec.stages = std::move(stages);
    spec.constants = std::vector<Constant>{};
    spec.flags = f;
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  Status RunOnce(Method* m, int call, cudaStream_t stream = nullptr) {
    if (stream == nullptr) stream = s();
    std::vector<float> v(kN);
    for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(call + i);
    in_.Upload(v);
    TensorRef ti{in_.get(), DType::kFloat32, {kN}, {}}, to{out_.get(), DType::kFloat32, {kN}, {}};
    Status st = m->Run({&ti, 1}, {&to, 1}, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return st;
  }

  // Call `call` with host_b_ = 700 on a stream made for it, which no
  // earlier call of `m` ran on: it must wait for the last launch.
  Status RunOnNewStream(Method* m, int call) {
    auto other = Stream::Create();
    if (!other.ok()) return other.status();
    host_b_ = 700;
    return RunOnce(m, call, other->get());
  }

  DeviceBuffer<float> in_{kN}, out_{kN};
  int host_b_ = 0;
  int host_calls_ = 0;
};

void ExpectTransformerish(StagesTest* t, Method* m, int calls, int* host_b, DeviceBuffer<float>& out) {
  for (int call = 1; call <= calls; ++call) {
    *host_b = 100 * call;  // different on every call: the eager stage must see it
    ASSERT_TRUE(t->RunOnce(m, call).ok());
    EXPECT_EQ(out.Download()[5], 2.0f * (call + 5) + 100.0f * call + 1.0f) << "call " << call;
  }
}

TEST_F(StagesTest, PiecesAroundAnEagerStageReplayAndTheEagerStageRunsEveryCall) {
  for (Binding b : {Binding::kAuto, Binding::kStaged}) {
    MethodFlags f;
    f.binding = b;
    host_calls_ = 0;
    Method* m = Register("block_" + std::string(BindingName(b)), Transformerish(), f);
    ExpectTransformerish(this, m, 8, &host_b_, out_);
    EXPECT_EQ(host_calls_, 8);
    MethodReport r = m->Report();
    EXPECT_EQ(r.phase, MethodPhase::kReplay) << r.graphs_off_reason;
    EXPECT_EQ(r.replays, 4);  // 3 warmups, the capture, 4 replays
    EXPECT_EQ(r.eager_calls, 0);
    ASSERT_EQ(r.pieces.size(), 2u);
    EXPECT_EQ(r.pieces[0].stages, std::vector<std::string>{"pre"});
    EXPECT_EQ(r.pieces[1].stages, std::vector<std::string>{"post"});
    EXPECT_TRUE(r.pieces[0].graphed && r.pieces[1].graphed);
    EXPECT_EQ(r.pieces[0].replays, 4);
    EXPECT_NE(mgr_->ReportJson().find("\"pieces\":[{\"stages\":[\"pre\"]"), std::string::npos);
  }
}

TEST_F(StagesTest, OnlyTheLastPieceRecordsAndTheCallOnAnotherStreamWaitsForIt) {
  Method* m = Register("block_records_once", Transformerish());
  ExpectTransformerish(this, m, 6, &host_b_, out_);
  MethodReport r = m->Report();
  ASSERT_EQ(r.pieces.size(), 2u);
  // No staging copies ("post" reads no input of the method, which another
  // piece does): the first piece is its kernel alone; the last one ends in
  // the completion record node, so a replay records no event on the host.
  for (const PieceReport& p : r.pieces) EXPECT_TRUE(p.graphed) << p.reason;
  EXPECT_EQ(r.pieces[0].graph_nodes, 1u) << r.pieces[0].reason;
  EXPECT_EQ(r.pieces[1].graph_nodes, 2u) << r.pieces[1].reason;
  // A call on a new stream waits for that record.
  Status st = RunOnNewStream(m, 7);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(out_.Download()[5], 2.0f * (7 + 5) + 700.0f + 1.0f);
  host_b_ = 800;
  st = RunOnce(m, 8);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(out_.Download()[5], 2.0f * (8 + 5) + 800.0f + 1.0f);
  EXPECT_TRUE(m->Release().ok());
  EXPECT_EQ(m->Report().replays, 4);
}

TEST_F(StagesTest, AMethodEndingInAnEagerStageHasNoRecordNodeAndTheCallRecordsItsEnd) {
  std::vector<Stage> stages = Transformerish();
  std::swap(stages[1], stages[2]);  // pre, post (one piece), then the eager stage
  Method* m = Register("eager_last", std::move(stages));
  for (int call = 1; call <= 5; ++call) {
    host_b_ = 10 * call;
    ASSERT_TRUE(RunOnce(m, call).ok());
    EXPECT_EQ(out_.Download()[5], 2.0f * (call + 5) + 1.0f + 10.0f * call) << "call " << call;
  }
  MethodReport r = m->Report();
  ASSERT_EQ(r.pieces.size(), 1u);
  EXPECT_TRUE(r.pieces[0].graphed) << r.pieces[0].reason;
  EXPECT_EQ(r.pieces[0].graph_nodes, 2u) << r.pieces[0].reason;  // pre and post, no record: the eager stage follows
  const int64_t replays = r.replays;
  Status st = RunOnNewStream(m, 7);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(out_.Download()[5], 2.0f * (7 + 5) + 1.0f + 700.0f);
  EXPECT_TRUE(m->Release().ok());
  EXPECT_EQ(m->Report().replays, replays + 1);  // the call on the new stream replayed
}

TEST_F(StagesTest, APieceWhoseCaptureFailsRunsEagerlyWhileTheOthersKeepTheirGraphs) {
  DeviceBuffer<float> scalar(1);
  scalar.Upload(std::vector<float>{1.0f});
  std::vector<Stage> stages = Transformerish();
  // post reads a device value back: it cannot be captured.
  stages[2].fn = [&scalar](Call& c) -> Status {
    ENCORE_ASSIGN_OR_RETURN(float one, shims::ReadScalar(scalar.get(), c.stream()));
    return Affine(c.output(0).data, c.output(0).data, 1.0f, one, c.stream());
  };
  Method* m = Register("half_graphed", std::move(stages));
  ExpectTransformerish(this, m, 7, &host_b_, out_);
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kReplay) << r.graphs_off_reason;
  ASSERT_EQ(r.pieces.size(), 2u);
  EXPECT_TRUE(r.pieces[0].graphed);
  EXPECT_FALSE(r.pieces[1].graphed);
  EXPECT_NE(r.pieces[1].reason.find("capture failed"), std::string::npos) << r.pieces[1].reason;
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.eager_calls, 0);
  EXPECT_GE(logs_.Count("capture_failed"), 1);
}

TEST_F(StagesTest, ABodyOfEagerStagesOnlyTurnsGraphsOffAtItsFirstCapture) {
  // Nothing to graph: the first capture call runs the stages eagerly and
  // turns graphs off, so no later call goes through a capture again.
  std::vector<Stage> stages = Transformerish();
  for (Stage& st : stages) st.eager = true;
  Method* m = Register("all_eager", std::move(stages));
  ExpectTransformerish(this, m, 8, &host_b_, out_);
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(r.warmup_calls, 3);
  EXPECT_EQ(r.eager_calls, 5);  // the capture call and the four after it
  EXPECT_EQ(logs_.Count("graphs_off"), 1);
  EXPECT_EQ(host_calls_, 8);
}

TEST_F(StagesTest, AnEagerStageThatFailsStopsTheCallAndLaterStagesDoNotRun) {
  std::vector<Stage> stages = Transformerish();
  stages[1].fn = [this](Call& c) -> Status {
    if (c.index() == 6) return InternalError("attention metadata missing");
    return Affine(c.output(0).data, c.output(0).data, 1.0f, static_cast<float>(host_b_), c.stream());
  };
  Method* m = Register("fails_once", std::move(stages));
  for (int call = 1; call <= 5; ++call) ASSERT_TRUE(RunOnce(m, call).ok());
  Status st = RunOnce(m, 6);
  EXPECT_EQ(st.message(), "attention metadata missing");
  EXPECT_EQ(out_.Download()[5], 2.0f * (6 + 5)) << "post ran after the failed stage";
  host_b_ = 0;
  ASSERT_TRUE(RunOnce(m, 7).ok());
  EXPECT_EQ(out_.Download()[5], 2.0f * (7 + 5) + 1.0f);
}

TEST_F(StagesTest, RegisterRejectsBadStagesNamingTheMethod) {
  MethodSpec both;
  both.name = "both";
  both.fn = [](Call&) { return OkStatus(); };
  both.stages = Transformerish();
  EXPECT_EQ(mgr_->Register(std::move(both)).status().code(), StatusCode::kInvalidArgument);
  MethodSpec twice;
  twice.name = "twice";
  twice.stages = {Stage{"a", [](Call&) { return OkStatus(); }}, Stage{"a", [](Call&) { return OkStatus(); }}};
  StatusOr<Method*> r = mgr_->Register(std::move(twice));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("method 'twice'"), std::string_view::npos) << r.status();
  EXPECT_EQ(mgr_->Find("twice"), nullptr);
}

TEST_F(StagesTest, CallStageNamesTheStage) {
  std::vector<std::string> seen;
  Method* m = Register("named", {Stage{"one", [&](Call& c) {
                                        seen.emplace_back(c.stage());
                                        return Affine(c.input(0).data, c.output(0).data, 1.0f, 0.0f, c.stream());
                                      }},
                                 Stage{"two", [&](Call& c) {
                                         seen.emplace_back(c.stage());
                                         return OkStatus();
                                       },
                                       true}});
  ASSERT_TRUE(RunOnce(m, 1).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two"}));
}

}  // namespace
}  // namespace encore
