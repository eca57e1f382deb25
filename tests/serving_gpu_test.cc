// SPDX-License-Identifier: Apache-2.0
// Serving traffic (docs/design.md "Serving: padding to buckets, learned
// buckets, Precapture, a memory budget"): on_new_shape=pad with listed and learned
// buckets, Method::Precapture, ManagerOptions::graph_memory_budget.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/graph/manager.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kCols = 16;
constexpr float kSentinel = -7.0f;

// A (rows, kCols) float tensor.
TensorRef Rows(void* p, int64_t rows) { return TensorRef{p, DType::kFloat32, {rows, kCols}, {}}; }

MethodFlags Pad(std::vector<int64_t> buckets, int max_graphs = 4) {
  MethodFlags f;
  f.warmup_calls = 0;
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = std::move(buckets);
  f.max_graphs = max_graphs;
  // Every padded call replays: these tests pin what padding does, and the
  // measured rule (tests/padding_gpu_test.cc) would time some replays and
  // run some calls eagerly, as the device's speed says.
  f.max_padding = 1e6;
  return f;
}

class ServingGpuTest : public testing::GpuStreamTest {
 protected:
  void MakeManager(size_t budget = 0) {
    ManagerOptions o;
    o.logger = logs_.logger();
    o.graph_memory_budget = budget;
    auto m = Manager::Create(o);
    ASSERT_TRUE(m.ok()) << m.status();
    manager_ = *std::move(m);
  }
  Method* Register(const std::string& name, MethodFlags flags, MethodFn fn = nullptr) {
    if (!manager_) MakeManager();
    MethodSpec spec;
    spec.name = name;
    spec.constants = std::vector<Constant>{};
    spec.flags = flags;
    spec.fn = fn ? std::move(fn) : [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
    auto r = manager_->Register(std::move(spec));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }
  // x[r][c] = base + r * kCols + c for every row the buffer holds.
  static void Fill(DeviceBuffer<float>& x, float base) {
    std::vector<float> v(x.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
    x.Upload(v);
  }
  // Rows [0, b) of y are 2x + 1; rows after them still hold kSentinel.
  void ExpectRows(DeviceBuffer<float>& y, float base, int64_t b) {
    ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    std::vector<float> got = y.Download();
    for (size_t i = 0; i < got.size(); ++i) {
      const float want = static_cast<int64_t>(i) < b * kCols ? 2.0f * (base + static_cast<float>(i)) + 1.0f : kSentinel;
      ASSERT_EQ(got[i], want) << "element " << i << " (row " << i / kCols << ") of a call with batch " << b;
    }
  }
  // Runs one call of batch b on x and a fresh y, and checks y.
  void RunAndCheck(Method* m, DeviceBuffer<float>& x, DeviceBuffer<float>& y, float base, int64_t b) {
    y.Fill(kSentinel);
    TensorRef in = Rows(x.get(), b), out = Rows(y.get(), b);
    Status st = m->Run({&in, 1}, {&out, 1}, s());
    ASSERT_TRUE(st.ok()) << st;
    ExpectRows(y, base, b);
  }

  LogCapture logs_;
  std::unique_ptr<Manager> manager_;
};

// A call of batch b replays the smallest bucket >= b; only its b rows are
// written; every listed bucket is kept.
TEST_F(ServingGpuTest, ListedBucketsReplayPaddedAndWriteOnlyTheCallsRows) {
  Method* m = Register("serve", Pad({2, 4, 8}, /*max_graphs=*/1));
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(8 * kCols), y(8 * kCols);
  Fill(x, 1.0f);
  const int64_t batches[] = {3, 3, 4, 1, 8, 5, 2};
  int64_t real = 0, padded = 0;
  const int64_t bucket_of[] = {0, 2, 2, 4, 4, 8, 8, 8, 8};
  for (int64_t b : batches) {
    RunAndCheck(m, x, y, 1.0f, b);
    real += b;
    padded += bucket_of[b] - b;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.calls, 7);
  EXPECT_EQ(r.captures, 3);  // buckets 4, 2, 8
  EXPECT_EQ(r.replays, 4);
  EXPECT_EQ(r.eager_calls, 0);
  EXPECT_EQ(r.recaptures, 0);
  EXPECT_EQ(r.buckets, (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ(r.real_rows, real);
  EXPECT_EQ(r.padded_rows, padded);
  // max_graphs=1 does not cap listed buckets: all three graphs are kept.
  ASSERT_EQ(r.captured_input_shapes.size(), 3u);
  EXPECT_EQ(r.captured_input_shapes[0][0], (Shape{2, kCols}));  // the most recent: the call of 2
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_EQ(r.binding_reason.rfind("on_new_shape=pad: staged", 0), 0u) << r.binding_reason;
  EXPECT_GT(r.graph_memory_bytes, 0u);
  EXPECT_NE(manager_->ReportJson().find("\"buckets\":[2,4,8]"), std::string::npos);
}

// The padded rows of the static inputs are zero on every replay, even after
// a larger batch filled them: with copy_outputs=off the bucket's outputs
// show f(0) = 1 there.
TEST_F(ServingGpuTest, PaddedInputRowsAreZero) {
  MethodFlags f = Pad({4});
  f.copy_outputs = false;
  Method* m = Register("serve", f);
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(4 * kCols), y(4 * kCols);
  Fill(x, 10.0f);
  for (int64_t b : {4, 2, 1}) {
    TensorRef in = Rows(x.get(), b), out = Rows(y.get(), b);
    ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
    ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    MethodReport r = m->Report();
    ASSERT_EQ(r.static_outputs.size(), 1u);
    EXPECT_EQ(r.static_outputs[0].shape, (Shape{4, kCols}));
    std::vector<float> got(4 * kCols);
    ASSERT_EQ(cudaMemcpy(got.data(), r.static_outputs[0].data, got.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int64_t i = 0; i < 4 * kCols; ++i) {
      const float want = i < b * kCols ? 2.0f * (10.0f + static_cast<float>(i)) + 1.0f : 1.0f;
      ASSERT_EQ(got[i], want) << "element " << i << ", batch " << b;
    }
  }
  EXPECT_EQ(m->Report().replays, 2);
}

TEST_F(ServingGpuTest, ABatchAboveTheLargestBucketRunsEagerly) {
  Method* m = Register("serve", Pad({2, 4}));
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(6 * kCols), y(6 * kCols);
  Fill(x, 3.0f);
  RunAndCheck(m, x, y, 3.0f, 6);
  RunAndCheck(m, x, y, 3.0f, 3);
  RunAndCheck(m, x, y, 3.0f, 5);
  MethodReport r = m->Report();
  EXPECT_EQ(r.eager_calls, 2);
  EXPECT_EQ(r.captures, 1);
  // Only the call of 3 launched a padded graph (bucket 4).
  EXPECT_EQ(r.real_rows, 3);
  EXPECT_EQ(r.padded_rows, 1);
  EXPECT_EQ(r.calls, 3);
}

TEST_F(ServingGpuTest, BadBatchesAreInvalidArgumentNamingTheTensor) {
  Method* m = Register("serve", Pad({4}), [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); });
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(4 * kCols), x2(4 * kCols), y(4 * kCols);
  TensorRef ins[] = {Rows(x.get(), 4), Rows(x2.get(), 3)};
  TensorRef out = Rows(y.get(), 4);
  Status st = m->Run(ins, {&out, 1}, s());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("method 'serve': input 1 has 3 in dim 0, but input 0 has 4"), std::string::npos) << st;
  TensorRef scalar{y.get(), DType::kFloat32, {}, {}};
  st = m->Run({&ins[0], 1}, {&scalar, 1}, s());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("method 'serve': output 0 has rank 0"), std::string::npos) << st;
  // A column-major input: its first b rows are not a prefix of its memory.
  TensorRef transposed{x.get(), DType::kFloat32, {4, kCols}, {1, 4}};
  st = m->Run({&transposed, 1}, {&out, 1}, s());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("method 'serve': input 0 has stride 1 in dim 0"), std::string::npos) << st;
  MethodReport r = m->Report();
  EXPECT_EQ(r.calls, 0);
  EXPECT_EQ(r.captures, 0);
}

// docs/design.md: a padded replay makes the two CUDA calls of any replay,
// cudaGetDevice and cudaGraphLaunch, whether its b repeats or changes: the
// batch reaches the graph through the rows ring, not a parameter rewrite.
TEST_F(ServingGpuTest, APaddedReplayIsOneGetDeviceAndOneGraphLaunchWhateverItsBatch) {
  Method* m = Register("serve", Pad({8}));
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(8 * kCols), y(8 * kCols);
  Fill(x, 5.0f);
  RunAndCheck(m, x, y, 5.0f, 5);
  RunAndCheck(m, x, y, 5.0f, 3);
  y.Fill(kSentinel);
  constexpr int kCalls = 50;
  auto expect_two_calls_each = [&](const CudaFaultInjector& counter) {
    for (int c = 0; c < static_cast<int>(CudaCall::kCount); ++c) {
      const CudaCall call = static_cast<CudaCall>(c);
      const int want = call == CudaCall::kGraphLaunch || call == CudaCall::kGetDevice ? kCalls : 0;
      EXPECT_EQ(counter.Count(call), want) << CudaCallName(call);
    }
  };
  {
    CudaFaultInjector counter;
    TensorRef in = Rows(x.get(), 5), out = Rows(y.get(), 5);
    for (int i = 0; i < kCalls; ++i) ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
    expect_two_calls_each(counter);
  }
  ExpectRows(y, 5.0f, 5);
  {
    CudaFaultInjector counter;
    for (int i = 0; i < kCalls; ++i) {
      TensorRef in = Rows(x.get(), 1 + i % 8), out = Rows(y.get(), 1 + i % 8);
      ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
    }
    expect_two_calls_each(counter);
  }
  y.Fill(kSentinel);
  RunAndCheck(m, x, y, 5.0f, 7);
  EXPECT_EQ(m->Report().captures, 1);
}

// Many padded launches queued behind a stalled stream, each with its own b,
// input and output: every launch reads its own slot of the rows ring (more
// launches than slots, so the host waits for the device before reusing
// one), and each output holds exactly its call's rows.
TEST_F(ServingGpuTest, QueuedLaunchesEachReadTheirOwnBatch) {
  Method* m = Register("serve", Pad({4, 16}));
  ASSERT_NE(m, nullptr);
  constexpr int kCalls = 2600;  // more than twice PadRowsShared::kSlots (1024)
  constexpr int64_t kRows = 16;
  DeviceBuffer<float> x(kCalls * kRows * kCols), y(kCalls * kRows * kCols);
  Fill(x, 0.5f);
  y.Fill(kSentinel);
  auto batch = [](int i) { return 1 + (i * 7) % kRows; };
  // Capture both buckets first, then stall the stream for 100 ms so the
  // launches queue up behind it.
  for (int i = 0; i < 2; ++i) {
    TensorRef in = Rows(x.get() + i * kRows * kCols, batch(i)), out = Rows(y.get() + i * kRows * kCols, batch(i));
    ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
  }
  ENCORE_CUDA_ASSERT(cudaLaunchHostFunc(
      s(), [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }, nullptr));
  for (int i = 2; i < kCalls; ++i) {
    TensorRef in = Rows(x.get() + i * kRows * kCols, batch(i)), out = Rows(y.get() + i * kRows * kCols, batch(i));
    ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok()) << "call " << i;
  }
  ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
  std::vector<float> got = y.Download();
  for (int i = 0; i < kCalls; ++i) {
    for (int64_t e = 0; e < kRows * kCols; ++e) {
      const int64_t at = i * kRows * kCols + e;
      const float want = e < batch(i) * kCols ? 2.0f * (0.5f + static_cast<float>(at)) + 1.0f : kSentinel;
      ASSERT_EQ(got[at], want) << "call " << i << " (batch " << batch(i) << ") element " << e;
    }
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.calls, kCalls);
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.replays, kCalls - 2);
}

// Learned buckets: at most max_graphs, chosen after the first review, no
// eager call after it, every output right.
TEST_F(ServingGpuTest, LearnedBucketsStayWithinMaxGraphsAndStopRunningEagerly) {
  Method* m = Register("serve", Pad({}, /*max_graphs=*/3));
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(64 * kCols), y(64 * kCols);
  Fill(x, 2.0f);
  const int64_t pattern[] = {5, 17, 60, 5, 3, 17, 5, 12, 40, 5, 17, 60, 5};
  int64_t real = 0;
  int64_t eager_after_review = 0;
  for (int i = 0; i < 400; ++i) {
    const int64_t b = pattern[i % 13];
    RunAndCheck(m, x, y, 2.0f, b);
    if (i >= 31) real += b;  // the eager calls before the first review launched no padded graph
    if (i == 31) eager_after_review = m->Report().eager_calls;
  }
  MethodReport r = m->Report();
  // The first review comes with the 32nd call, which already replays.
  EXPECT_EQ(eager_after_review, 31);
  EXPECT_EQ(r.eager_calls, 31);
  EXPECT_LE(r.buckets.size(), 3u);
  EXPECT_FALSE(r.buckets.empty());
  EXPECT_GE(r.buckets.back(), 60);
  EXPECT_LE(r.captured_input_shapes.size(), 3u);
  EXPECT_GE(r.bucket_changes, 1);
  EXPECT_EQ(r.real_rows, real);
  EXPECT_EQ(r.calls, 400);
  EXPECT_EQ(r.replays + r.captures + r.recaptures + r.eager_calls, 400);
  EXPECT_GE(logs_.Count("buckets"), 1);
  auto ev = logs_.Find("buckets");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->fields.count("previous"), 1u);
  EXPECT_EQ(ev->field("previous"), "");
  EXPECT_EQ(ev->field("call"), "32");
}

// Precapture under pad: every listed bucket, largest first, from rows
// [0, B) of the given tensors; not calls; the first Run replays.
TEST_F(ServingGpuTest, PrecaptureCapturesEveryBucketLargestFirst) {
  MethodFlags f = Pad({1, 2, 4, 8});
  f.warmup_calls = 2;
  Method* m = Register("serve", f);
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(8 * kCols), y(8 * kCols);
  Fill(x, 4.0f);
  y.Fill(kSentinel);
  TensorRef in = Rows(x.get(), 8), out = Rows(y.get(), 8);
  Status st = m->Precapture({&in, 1}, {&out, 1}, s());
  ASSERT_TRUE(st.ok()) << st;
  ExpectRows(y, 4.0f, 8);  // the precapture launches wrote the given outputs
  MethodReport r = m->Report();
  EXPECT_EQ(r.precaptures, 4);
  EXPECT_EQ(r.captures, 4);
  EXPECT_EQ(r.calls, 0);
  EXPECT_EQ(r.warmup_calls, 0);
  EXPECT_EQ(r.replays, 0);
  EXPECT_EQ(r.captured_input_shapes.size(), 4u);
  std::vector<CapturedEvent> pre = logs_.Named("precapture");
  ASSERT_EQ(pre.size(), 4u);
  const char* progress[] = {"1/4", "2/4", "3/4", "4/4"};
  const char* bucket[] = {"8", "4", "2", "1"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(pre[i].field("graph"), progress[i]);
    EXPECT_EQ(pre[i].field("bucket"), bucket[i]);
    EXPECT_FALSE(pre[i].field("us").empty());
  }
  RunAndCheck(m, x, y, 4.0f, 3);
  r = m->Report();
  EXPECT_EQ(r.calls, 1);
  EXPECT_EQ(r.replays, 1);
  EXPECT_EQ(r.captures, 4);
  EXPECT_EQ(r.warmup_calls, 0);
  EXPECT_EQ(r.phase, MethodPhase::kReplay);
}

TEST_F(ServingGpuTest, PrecaptureNeedsTheLargestBucketsRows) {
  Method* m = Register("serve", Pad({2, 16}));
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(8 * kCols), y(8 * kCols);
  TensorRef in = Rows(x.get(), 8), out = Rows(y.get(), 8);
  Status st = m->Precapture({&in, 1}, {&out, 1}, s());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("at least the largest bucket's 16 rows; they have 8"), std::string::npos) << st;
  EXPECT_EQ(m->Report().captures, 0);
}

// Without pad: the warmups and the capture happen in Precapture, and the
// first Run replays.
TEST_F(ServingGpuTest, PrecaptureWithoutPadWarmsUpAndCaptures) {
  Method* m = Register("forward", MethodFlags{});
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(4 * kCols), y(4 * kCols);
  Fill(x, 6.0f);
  TensorRef in = Rows(x.get(), 4), out = Rows(y.get(), 4);
  ASSERT_TRUE(m->Precapture({&in, 1}, {&out, 1}, s()).ok());
  MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.precaptures, 1);
  EXPECT_EQ(r.calls, 0);
  EXPECT_EQ(r.warmup_calls, 0);
  auto ev = logs_.Find("precapture");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->field("graph"), "1/1");
  RunAndCheck(m, x, y, 6.0f, 4);
  r = m->Report();
  EXPECT_EQ(r.replays, 1);
  EXPECT_EQ(r.calls, 1);
  // A second Precapture of the same signature captures nothing new.
  ASSERT_TRUE(m->Precapture({&in, 1}, {&out, 1}, s()).ok());
  EXPECT_EQ(m->Report().captures, 1);
}

constexpr size_t kMiB = size_t{1} << 20;

// A capture that cannot fit the budget even alone runs the call eagerly
// (counted, over_budget logged once) and drops no graph; the report gives
// each method's graph memory.
TEST_F(ServingGpuTest, OverBudgetRunsEagerlyLoggedOnceAndCounted) {
  MakeManager(/*budget=*/3 * kMiB);
  MethodFlags f;
  f.warmup_calls = 0;
  Method* small = Register("small", f);
  Method* big = Register("big", f);
  ASSERT_TRUE(small && big);
  DeviceBuffer<float> xs(4 * kCols), ys(4 * kCols);
  Fill(xs, 1.0f);
  RunAndCheck(small, xs, ys, 1.0f, 4);
  EXPECT_EQ(small->Report().captures, 1);
  EXPECT_EQ(small->Report().graph_memory_bytes, kMiB);  // one slab of the arena's minimum
  // 2 x 1 MiB of static buffers: 2 MiB more would make 3 MiB + the tables.
  const int64_t rows = static_cast<int64_t>(kMiB / sizeof(float) / kCols);
  DeviceBuffer<float> xb(rows * kCols), yb(rows * kCols);
  Fill(xb, 0.0f);
  for (int i = 0; i < 3; ++i) RunAndCheck(big, xb, yb, 0.0f, rows);
  MethodReport r = big->Report();
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(r.eager_calls, 3);
  EXPECT_EQ(r.over_budget_calls, 3);
  EXPECT_EQ(r.budget_drops, 0);
  EXPECT_EQ(r.graph_memory_bytes, 0u);
  EXPECT_EQ(r.graphs_off_reason, "");  // graphs stay on: a later call may fit
  EXPECT_EQ(logs_.Count("over_budget"), 1);
  auto ev = logs_.Find("over_budget");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->field("method"), "big");
  EXPECT_EQ(ev->field("budget"), std::to_string(3 * kMiB));
  EXPECT_EQ(small->Report().captures, 1);  // another method's graphs are never dropped
  EXPECT_NE(manager_->ReportJson().find("\"graph_memory_bytes\":" + std::to_string(kMiB)), std::string::npos);
  // After the small method releases its graphs the big one fits.
  ASSERT_TRUE(small->Release().ok());
  RunAndCheck(big, xb, yb, 0.0f, rows);
  EXPECT_EQ(big->Report().captures, 1);
  EXPECT_LE(big->Report().graph_memory_bytes, 3 * kMiB);
}

// When the manager is over its budget (a capture allocated more than its
// estimate), the next capture of that method first drops its least
// recently used graphs, and the arena frees the slabs no kept graph
// reaches.
TEST_F(ServingGpuTest, OverBudgetDropsTheMethodsLeastRecentlyUsedGraphFirst) {
  MakeManager(/*budget=*/2 * kMiB);
  MethodFlags f;
  f.warmup_calls = 0;
  f.on_new_shape = ShapePolicy::kRecapture;
  Method* m = Register("rec", f, [](Call& c) -> Status {
    // The capture of 4 rows takes 1.5 MiB of scratch its eager calls never
    // needed: the arena grows during the capture, past the budget.
    if (c.kind() == CallKind::kCapture && c.input(0).shape[0] == 4) {
      StatusOr<void*> scratch = c.Allocate(3 * kMiB / 2);
      if (!scratch.ok()) return scratch.status();
    }
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(8 * kCols), y(8 * kCols);
  Fill(x, 9.0f);
  RunAndCheck(m, x, y, 9.0f, 4);
  MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_GT(r.graph_memory_bytes, 2 * kMiB);
  RunAndCheck(m, x, y, 9.0f, 8);  // a new shape: over budget, so the graph of 4 goes first
  r = m->Report();
  EXPECT_EQ(r.budget_drops, 1);
  EXPECT_EQ(r.recaptures, 1);
  EXPECT_EQ(r.over_budget_calls, 0);
  ASSERT_EQ(r.captured_input_shapes.size(), 1u);
  EXPECT_EQ(r.captured_input_shapes[0][0], (Shape{8, kCols}));
  EXPECT_LE(r.graph_memory_bytes, 2 * kMiB);
  EXPECT_EQ(logs_.Count("budget_drop"), 1);
  RunAndCheck(m, x, y, 9.0f, 8);
  EXPECT_EQ(m->Report().replays, 1);
}

}  // namespace
}  // namespace encore
