// SPDX-License-Identifier: Apache-2.0
// Never slower than eager (docs/design.md "Serving"): under
// on_new_shape=pad a call whose padded replay would take longer than its
// own rows run eagerly runs eagerly (reason padding), by max_padding's
// exact rule or by what encore measured.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "encore/graph/manager.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kCols = 16;
constexpr float kSentinel = -7.0f;

TensorRef Rows(void* p, int64_t rows) { return TensorRef{p, DType::kFloat32, {rows, kCols}, {}}; }

int64_t Padding(const MethodReport& r) {
  auto it = r.eager_by_reason.find(eager_reason::kPadding);
  return it == r.eager_by_reason.end() ? 0 : it->second;
}

class PaddingGpuTest : public testing::GpuStreamTest {
 protected:
  Method* Register(MethodFlags flags, MethodFn fn = nullptr) {
    ManagerOptions o;
    o.logger = logs_.logger();
    auto m = Manager::Create(o);
    EXPECT_TRUE(m.ok()) << m.status();
    manager_ = *std::move(m);
    MethodSpec spec;
    spec.name = "serve";
    spec.constants = std::vector<Constant>{};
    spec.flags = flags;
    spec.fn = fn ? std::move(fn) : [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
    auto r = manager_->Register(std::move(spec));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }
  // One call of batch b on fresh outputs; rows [0, b) must be 2x + 1 and
  // the rest untouched.
  void RunAndCheck(Method* m, int64_t b) {
    y_->Fill(kSentinel);
    TensorRef in = Rows(x_->get(), b), out = Rows(y_->get(), b);
    Status st = m->Run({&in, 1}, {&out, 1}, s());
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    std::vector<float> got = y_->Download();
    for (size_t i = 0; i < got.size(); ++i) {
      const float want = static_cast<int64_t>(i) < b * kCols ? 2.0f * static_cast<float>(i) + 1.0f : kSentinel;
      ASSERT_EQ(got[i], want) << "element " << i << " of a call with batch " << b;
    }
  }
  void SetUp() override {
    testing::GpuStreamTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    x_ = std::make_unique<DeviceBuffer<float>>(64 * kCols);
    y_ = std::make_unique<DeviceBuffer<float>>(64 * kCols);
    std::vector<float> v(x_->size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
    x_->Upload(v);
    // The kernels' modules loaded now, so no timed call pays for it.
    ASSERT_EQ(testing::LaunchSpin(1, 1, s()), cudaSuccess);
    ASSERT_EQ(testing::LaunchAffine(x_->get(), y_->get(), 1.0f, 0.0f, 1, s()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
  }

  std::unique_ptr<DeviceBuffer<float>> x_, y_;
  LogCapture logs_;
  std::unique_ptr<Manager> manager_;
};

// max_padding=2: eager exactly when the bucket holds more than 2b rows, and
// no graph is captured for such a call; real_rows and padded_rows count the
// calls a padded graph answered.
TEST_F(PaddingGpuTest, MaxPaddingSendsCallsThatPadTooMuchEagerly) {
  MethodFlags f;
  f.warmup_calls = 0;
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = {2, 8};
  f.max_padding = 2;
  Method* m = Register(f);
  ASSERT_NE(m, nullptr);
  RunAndCheck(m, 3);  // bucket 8 > 6: eager, and bucket 8 gets no graph
  MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(Padding(r), 1);
  RunAndCheck(m, 4);  // 8 = 2 * 4: captured and launched
  RunAndCheck(m, 5);  // replays
  RunAndCheck(m, 1);  // bucket 2 = 2 * 1: captured
  RunAndCheck(m, 3);  // eager again, though bucket 8 has a graph now
  RunAndCheck(m, 8);
  r = m->Report();
  EXPECT_EQ(r.calls, 6);
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.replays, 2);
  EXPECT_EQ(r.eager_calls, 2);
  EXPECT_EQ(Padding(r), 2);
  EXPECT_EQ(r.real_rows, 4 + 5 + 1 + 8);
  EXPECT_EQ(r.padded_rows, 4 + 3 + 1 + 0);
  EXPECT_NE(manager_->ReportJson().find("\"max_padding\":2"), std::string::npos);
  EXPECT_NE(manager_->ReportJson().find("\"padding\":2"), std::string::npos);
}

// max_padding from the flags text, as an operator sets it.
TEST_F(PaddingGpuTest, MaxPaddingFromTheFlagsText) {
  ManagerOptions o;
  o.logger = logs_.logger();
  o.flags_text = "serve:warmup=0,on_new_shape=pad,buckets=16,max_padding=1.5";
  auto made = Manager::Create(o);
  ASSERT_TRUE(made.ok()) << made.status();
  manager_ = *std::move(made);
  MethodSpec spec;
  spec.name = "serve";
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
  Method* m = *manager_->Register(std::move(spec));
  RunAndCheck(m, 10);  // 16 > 15: eager
  RunAndCheck(m, 11);  // 16 <= 16.5: captured
  RunAndCheck(m, 12);
  MethodReport r = m->Report();
  EXPECT_DOUBLE_EQ(r.flags.max_padding, 1.5);
  EXPECT_EQ(Padding(r), 1);
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 1);
}

// Measured: a body whose device time grows with its rows (20 us a row).
// The bucket of 64 replays 64 rows whatever the call's batch, so once
// encore has timed its replays and eager runs, calls of 2 and of 48 rows
// (about 0.04 and 0.96 ms eagerly against 1.3 ms replayed) run eagerly,
// and a full bucket replays.
TEST_F(PaddingGpuTest, MeasuredRuleRunsSmallBatchesOfASlowBucketEagerly) {
  MethodFlags f;
  f.warmup_calls = 3;
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = {64};
  constexpr int64_t kNsPerRow = 20000;
  Method* m = Register(f, [](Call& c) -> Status {
    ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 2.0f, 1.0f));
    cudaError_t e = testing::LaunchSpin(c.input(0).shape[0], kNsPerRow, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "LaunchSpin");
  });
  ASSERT_NE(m, nullptr);
  for (int i = 0; i < 3; ++i) RunAndCheck(m, 64);  // warmups: timed eager runs of 64 rows
  for (int i = 0; i < 4; ++i) RunAndCheck(m, 64);  // the capture, then timed replays
  // A span is read when a later call is timed, so the first call of 2 may
  // still replay (two replays read); the later ones run eagerly.
  for (int i = 0; i < 6; ++i) RunAndCheck(m, 2);
  MethodReport r = m->Report();
  const int64_t small_replays = 6 - Padding(r);
  EXPECT_LE(small_replays, 2) << r.ToJson();
  EXPECT_EQ(r.eager_calls, Padding(r));
  RunAndCheck(m, 48);
  EXPECT_EQ(Padding(m->Report()), Padding(r) + 1) << m->Report().ToJson();
  const int64_t replays = m->Report().replays;
  RunAndCheck(m, 64);  // a full bucket pads nothing: it replays
  r = m->Report();
  EXPECT_EQ(r.replays, replays + 1);
  // The eager calls launched no padded graph: five launches of 64 rows
  // (the capture's, three replays, the last) and the calls of 2 that
  // replayed.
  EXPECT_EQ(r.real_rows, 64 * 5 + 2 * small_replays);
  EXPECT_EQ(r.padded_rows, 62 * small_replays);
}

// A body of many short launches whose time does not grow with its rows: a
// replay (one launch) beats 17 eager launches. The warmups time one batch
// size only, so the fit takes their time per row and may send the first
// call of fewer rows eagerly; that call's own time corrects it, and from
// then on every call replays.
TEST_F(PaddingGpuTest, MeasuredRuleKeepsReplayingWhenReplaysAreFaster) {
  MethodFlags f;
  f.warmup_calls = 3;
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = {2};
  constexpr int64_t kNsPerRow = 5000;
  Method* m = Register(f, [](Call& c) -> Status {
    // Many small launches: eager runs pay each launch, a replay one.
    for (int k = 0; k < 16; ++k) {
      cudaError_t e = testing::LaunchSpin(1, kNsPerRow / 16, c.stream());
      if (e != cudaSuccess) return CudaStatus(e, "LaunchSpin");
    }
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  for (int i = 0; i < 3; ++i) RunAndCheck(m, 2);
  for (int i = 0; i < 20; ++i) RunAndCheck(m, 1 + i % 2);
  const int64_t learning = Padding(m->Report());
  EXPECT_LE(learning, 2) << m->Report().ToJson();
  const int64_t replays = m->Report().replays;
  for (int i = 0; i < 20; ++i) RunAndCheck(m, 1 + i % 2);
  MethodReport r = m->Report();
  EXPECT_EQ(Padding(r), learning) << r.ToJson();
  EXPECT_EQ(r.replays, replays + 20);
}

}  // namespace
}  // namespace encore
