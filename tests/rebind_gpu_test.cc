// SPDX-License-Identifier: Apache-2.0
// Method::RebindConstants: weights (and state) that move to new storage of
// the same size. Where the graphs are bound directly their references to
// the old storage are rewritten in place, with no warmup and no capture,
// in every executable, piece and kept signature; the old storage is then
// freed and filled with other data, which no later launch reads. Staged
// graphs (binding=staged, padded buckets) are dropped and captured again.
// Every result equals an eager run on the new weights.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/graph/manager.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/manager_fixture.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kCols = 8;
constexpr int64_t kRows = 4;
constexpr int64_t kN = kRows * kCols;
constexpr size_t kW1Bytes = 2 * kCols * sizeof(float);
constexpr size_t kW2Bytes = kCols * sizeof(float);

// One set of weights, on the device and as the host expects them.
struct Weights {
  explicit Weights(float seed) {
    for (int64_t i = 0; i < 2 * kCols; ++i) h1.push_back(seed + i);
    for (int64_t i = 0; i < kCols; ++i) h2.push_back(100 * seed + 3 * i);
    w1->Upload(h1);
    w2->Upload(h2);
  }
  std::unique_ptr<DeviceBuffer<float>> w1 = std::make_unique<DeviceBuffer<float>>(2 * kCols);
  std::unique_ptr<DeviceBuffer<float>> w2 = std::make_unique<DeviceBuffer<float>>(kCols);
  std::vector<float> h1, h2;
};

// Where the body finds its weights now: an application's body reads the
// weights it holds, which it moved.
struct Current {
  const float* w1 = nullptr;
  const float* w2 = nullptr;
};

Status Check(cudaError_t e, const char* what) { return e == cudaSuccess ? OkStatus() : CudaStatus(e, what); }

// out = x + w1[kCols + i % kCols] (an interior pointer), through scratch.
Status FirstHalf(Call& c, const Current* w) {
  return Check(testing::LaunchAddBroadcast(static_cast<const float*>(c.input(0).data), w->w1 + kCols, kCols,
                                           static_cast<float*>(c.output(0).data), c.input(0).numel(), c.stream()),
               "add w1");
}

// out += w2[i % kCols], w2 first copied into scratch by a memcpy node.
Status SecondHalf(Call& c, const Current* w) {
  ENCORE_ASSIGN_OR_RETURN(void* scratch, c.Allocate(kW2Bytes));
  ENCORE_RETURN_IF_ERROR(
      Check(cudaMemcpyAsync(scratch, w->w2, kW2Bytes, cudaMemcpyDefault, c.stream()), "copy w2"));
  float* out = static_cast<float*>(c.output(0).data);
  return Check(testing::LaunchAddBroadcast(out, static_cast<const float*>(scratch), kCols, out, c.output(0).numel(),
                                           c.stream()),
               "add w2");
}

class RebindTest : public testing::GpuManagerTest {
 public:
  void SetUp() override {
    GpuManagerTest::SetUp();
    if (IsSkipped()) return;
    weights_ = std::make_unique<Weights>(1.0f);
    Point(*weights_);
  }

  void Point(const Weights& w) {
    cur_.w1 = w.w1->get();
    cur_.w2 = w.w2->get();
  }

  std::vector<Constant> Listed(const Weights& w) const {
    return {{"w1", w.w1->get(), kW1Bytes, true}, {"w2", w.w2->get(), kW2Bytes, true}};
  }

  Method* Register(const std::string& name, MethodFlags f, bool stages = false) {
    MethodSpec spec;
    spec.name = name;
    const Current* w = &cur_;
    if (stages) {
      spec.stages = {Stage{"first", [w](Call& c) { return FirstHalf(c, w); }},
                     Stage{"host",
                           [](Call& c) {
                             float* out = static_cast<float*>(c.output(0).data);
                             return Check(testing::LaunchAffine(out, out, 1.0f, 0.5f, c.output(0).numel(), c.stream()),
                                          "host stage");
                           },
                           /*eager=*/true},
                     Stage{"second", [w](Call& c) { return SecondHalf(c, w); }}};
    } else {
      spec.fn = [w](Call& c) -> Status {
        ENCORE_RETURN_IF_ERROR(FirstHalf(c, w));
        return SecondHalf(c, w);
      };
    }
    spec.constants = Listed(*weights_);
    f.warmup_calls = 1;
    spec.flags = f;
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  // Runs `m` on rows of x[r][c] = seed + r * kCols + c and checks every
  // element against the weights `w` (plus 0.5 for the stages' host stage).
  void RunAndCheck(Method* m, DeviceBuffer<float>& x, DeviceBuffer<float>& y, float seed, int64_t rows,
                   const Weights& w, float host = 0.0f) {
    std::vector<float> v(rows * kCols);
    for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<float>(i);
    x.Upload(v);
    TensorRef in{x.get(), DType::kFloat32, {rows, kCols}, {}}, out{y.get(), DType::kFloat32, {rows, kCols}, {}};
    Status s = m->Run({&in, 1}, {&out, 1}, this->s());
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(cudaStreamSynchronize(this->s()), cudaSuccess);
    std::vector<float> got = y.Download();
    for (int64_t i = 0; i < rows * kCols; ++i) {
      const float want = v[i] + w.h1[kCols + i % kCols] + host + w.h2[i % kCols];
      ASSERT_EQ(got[i], want) << "element " << i << " of " << rows << " rows";
    }
  }

  // New weights at new addresses, the body pointed at them, the old ones
  // freed and their memory taken by buffers full of other values: a read of
  // an old address would show.
  Status MoveWeights(Method* m, float seed) {
    auto moved = std::make_unique<Weights>(seed);
    Point(*moved);
    const std::vector<Constant> list = Listed(*moved);
    Status s = m->RebindConstants(list);
    old_w1_ = weights_->w1->get();
    weights_ = std::move(moved);  // the old buffers are freed here
    reuse1_ = std::make_unique<DeviceBuffer<float>>(2 * kCols);
    reuse2_ = std::make_unique<DeviceBuffer<float>>(kCols);
    reuse1_->Fill(1e9f);
    reuse2_->Fill(1e9f);
    return s;
  }

  Current cur_;
  std::unique_ptr<Weights> weights_;
  std::unique_ptr<DeviceBuffer<float>> reuse1_, reuse2_;
  const float* old_w1_ = nullptr;
  DeviceBuffer<float> xa_{4 * kN}, ya_{4 * kN}, xb_{4 * kN}, yb_{4 * kN};
};

TEST_F(RebindTest, ADirectGraphIsRewrittenInEveryExecutableWithNoCapture) {
  Method* m = Register("direct", MethodFlags{});
  ASSERT_NE(m, nullptr);
  // Two buffer pairs taking turns: each earns an executable of its own.
  for (int call = 0; call < 6; ++call) {
    RunAndCheck(m, call % 2 ? xb_ : xa_, call % 2 ? yb_ : ya_, 10.0f * call, kRows, *weights_);
  }
  const MethodReport before = m->Report();
  ASSERT_EQ(before.binding, Binding::kDirect) << before.binding_reason;
  ASSERT_EQ(before.captures, 1);
  ASSERT_GE(before.exec_variants, 1);
  ASSERT_TRUE(MoveWeights(m, 7.0f).ok());
  // Usually the allocator hands the old storage straight back.
  if (reuse1_->get() != old_w1_) RecordProperty("old_storage_reused", "no");
  for (int call = 0; call < 6; ++call) {
    RunAndCheck(m, call % 2 ? xb_ : xa_, call % 2 ? yb_ : ya_, 3.0f * call, kRows, *weights_);
  }
  const MethodReport r = m->Report();
  EXPECT_EQ(r.rebinds, 1);
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.warmup_calls, before.warmup_calls);
  EXPECT_EQ(r.instantiations, before.instantiations);
  EXPECT_EQ(r.replays, before.replays + 6);
  EXPECT_EQ(logs_.Count("rebound"), 1);
  EXPECT_EQ(logs_.Count("rebind_recapture"), 0);
  EXPECT_NE(mgr_->ReportJson().find("\"rebinds\":1"), std::string::npos);
  // A second move, back and forth, is as good as the first.
  ASSERT_TRUE(MoveWeights(m, -2.0f).ok());
  RunAndCheck(m, xa_, ya_, 1.0f, kRows, *weights_);
  RunAndCheck(m, xb_, yb_, 2.0f, kRows, *weights_);
  EXPECT_EQ(m->Report().rebinds, 2);
  EXPECT_EQ(m->Report().captures, 1);
}

TEST_F(RebindTest, ABadRebindIsInvalidArgumentNamingTheConstantAndChangesNothing) {
  Method* m = Register("bad", MethodFlags{});
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 3; ++call) RunAndCheck(m, xa_, ya_, 1.0f * call, kRows, *weights_);
  Weights other(5.0f);
  std::vector<Constant> bigger = {{"w1", other.w1->get(), kW1Bytes + 4, true}};
  Status s = m->RebindConstants(bigger);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("constant 'w1' has 68 bytes, listed with 64"), std::string_view::npos) << s;
  std::vector<Constant> unknown = {{"w1", other.w1->get(), kW1Bytes, true}, {"bias", other.w2->get(), 4, true}};
  s = m->RebindConstants(unknown);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("constant 'bias'"), std::string_view::npos) << s;
  // Nothing moved: the graph still reads the listed weights.
  RunAndCheck(m, xa_, ya_, 4.0f, kRows, *weights_);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.rebinds, 0);
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(logs_.Count("rebound") + logs_.Count("rebind_recapture"), 0);
}

TEST_F(RebindTest, EveryPieceOfAMethodOfStagesIsRewritten) {
  Method* m = Register("stages", MethodFlags{}, /*stages=*/true);
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 4; ++call) RunAndCheck(m, xa_, ya_, 2.0f * call, kRows, *weights_, 0.5f);
  const MethodReport before = m->Report();
  ASSERT_EQ(before.pieces.size(), 2u);
  ASSERT_EQ(before.binding, Binding::kDirect) << before.binding_reason;
  ASSERT_TRUE(MoveWeights(m, 9.0f).ok());
  for (int call = 0; call < 3; ++call) RunAndCheck(m, xa_, ya_, 5.0f * call, kRows, *weights_, 0.5f);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.rebinds, 1);
  EXPECT_EQ(r.captures, before.captures);
  EXPECT_EQ(r.pieces[0].replays, before.pieces[0].replays + 3);
  EXPECT_EQ(r.pieces[1].replays, before.pieces[1].replays + 3);
}

TEST_F(RebindTest, EveryKeptSignatureIsRewritten) {
  MethodFlags f;
  f.on_new_shape = ShapePolicy::kRecapture;
  Method* m = Register("shapes", f);
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 3; ++call) {
    RunAndCheck(m, xa_, ya_, 1.0f, kRows, *weights_);
    RunAndCheck(m, xa_, ya_, 2.0f, 2 * kRows, *weights_);
  }
  const MethodReport before = m->Report();
  ASSERT_EQ(before.captured_input_shapes.size(), 2u);
  ASSERT_TRUE(MoveWeights(m, 4.0f).ok());
  RunAndCheck(m, xa_, ya_, 3.0f, kRows, *weights_);
  RunAndCheck(m, xa_, ya_, 4.0f, 2 * kRows, *weights_);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.rebinds, 1);
  EXPECT_EQ(r.captures + r.recaptures, before.captures + before.recaptures);
}

TEST_F(RebindTest, AStagedGraphIsDroppedAndCapturedAgain) {
  MethodFlags f;
  f.binding = Binding::kStaged;
  Method* m = Register("staged", f);
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 3; ++call) RunAndCheck(m, xa_, ya_, 1.0f * call, kRows, *weights_);
  ASSERT_EQ(m->Report().captures, 1);
  ASSERT_TRUE(MoveWeights(m, 6.0f).ok());
  auto ev = logs_.Find("rebind_recapture");
  ASSERT_TRUE(ev.has_value());
  EXPECT_NE(ev->field("reason").find("a graph is staged (binding=staged"), std::string::npos) << ev->line;
  // A warmup on the new weights, a capture, replays.
  for (int call = 0; call < 4; ++call) RunAndCheck(m, xa_, ya_, 2.0f * call, kRows, *weights_);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.rebinds, 0);
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.warmup_calls, 2);
}

TEST_F(RebindTest, PaddedBucketsAreStagedSoTheyAreCapturedAgain) {
  MethodFlags f;
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = {2, 4};
  Method* m = Register("padded", f);
  ASSERT_NE(m, nullptr);
  for (int64_t rows : {4, 3, 2, 1, 4, 2}) RunAndCheck(m, xa_, ya_, 1.0f * rows, rows, *weights_);
  const int64_t captures = m->Report().captures;
  ASSERT_GE(captures, 2);  // buckets 2 and 4
  ASSERT_TRUE(MoveWeights(m, 8.0f).ok());
  auto ev = logs_.Find("rebind_recapture");
  ASSERT_TRUE(ev.has_value());
  EXPECT_NE(ev->field("reason").find("on_new_shape=pad"), std::string::npos) << ev->line;
  for (int64_t rows : {4, 3, 2, 1, 4, 2}) RunAndCheck(m, xa_, ya_, 2.0f * rows, rows, *weights_);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.rebinds, 0);
  EXPECT_GE(r.captures, captures + 2);
}

TEST_F(RebindTest, AConstantMovedToHostMemoryIsNeverReadByAGraph) {
  Method* m = Register("to_host", MethodFlags{});
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 3; ++call) RunAndCheck(m, xa_, ya_, 1.0f * call, kRows, *weights_);
  float* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, kW2Bytes, cudaHostAllocDefault), cudaSuccess);
  for (int64_t i = 0; i < kCols; ++i) pinned[i] = weights_->h2[i];
  cur_.w2 = pinned;
  std::vector<Constant> list = {{"w2", pinned, kW2Bytes, true}};
  ASSERT_TRUE(m->RebindConstants(list).ok());
  auto ev = logs_.Find("rebind_recapture");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->field("reason"), "constant 'w2' moved to host memory");
  // Warmed up again, then the capture finds the host constant: eager.
  for (int call = 0; call < 3; ++call) RunAndCheck(m, xa_, ya_, 4.0f * call, kRows, *weights_);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_EQ(r.eager_by_reason.count("host_constant"), 1u);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// A decode step's state (a KV cache and its position) copied into new
// buffers: the appends go on where they left off, in the new cache. What
// the calls write, learned in the warmups, stays known: every replay after
// the rebind is verified (the cache's written block saved and put back)
// with no warmup to learn it again.
TEST_F(RebindTest, StateThatMovesWithItsContentsGoesOnWhereItLeftOff) {
  constexpr int64_t kSlots = 1 << 20;  // 4 MiB: more than the guard saves unasked
  auto cache = std::make_unique<DeviceBuffer<float>>(kSlots);
  auto pos = std::make_unique<DeviceBuffer<int>>(1);
  cache->Fill(0.0f);
  pos->Upload({0});
  struct State {
    float* cache;
    int* pos;
  } state{cache->get(), pos->get()};
  MethodSpec spec;
  spec.name = "append";
  spec.constants = std::vector<Constant>{{"cache", cache->get(), kSlots * sizeof(float)}, {"pos", pos->get(), 4}};
  MethodFlags f;
  f.warmup_calls = 2;
  f.verify_every = 1;
  spec.flags = f;
  spec.fn = [&state](Call& c) -> Status {
    return Check(testing::LaunchAppend(state.cache, 1, state.pos, static_cast<const float*>(c.input(0).data),
                                       static_cast<float*>(c.output(0).data), c.stream()),
                 "append");
  };
  auto made = mgr_->Register(std::move(spec));
  ASSERT_TRUE(made.ok()) << made.status();
  Method* m = *made;
  DeviceBuffer<float> x(1), y(1);
  auto step = [&](int call) {
    x.Upload({10.0f * call});
    TensorRef in{x.get(), DType::kFloat32, {1}, {}}, out{y.get(), DType::kFloat32, {1}, {}};
    ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
    EXPECT_EQ(y.Download()[0], 2.0f * (10.0f * call + (call - 1))) << "call " << call;
  };
  for (int call = 1; call <= 4; ++call) step(call);
  ASSERT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
  const int64_t verified = m->Report().verified_launches;
  auto cache2 = std::make_unique<DeviceBuffer<float>>(kSlots);
  auto pos2 = std::make_unique<DeviceBuffer<int>>(1);
  ASSERT_EQ(cudaMemcpy(cache2->get(), cache->get(), kSlots * sizeof(float), cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pos2->get(), pos->get(), sizeof(int), cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // a copy between device buffers may return before it lands
  state = State{cache2->get(), pos2->get()};
  std::vector<Constant> list = {{"cache", cache2->get(), kSlots * sizeof(float)}, {"pos", pos2->get(), 4}};
  ASSERT_TRUE(m->RebindConstants(list).ok());
  cache.reset();
  pos.reset();
  DeviceBuffer<float> reuse(kSlots);
  reuse.Fill(-1.0f);
  for (int call = 5; call <= 8; ++call) step(call);
  EXPECT_EQ(pos2->Download()[0], 8);
  std::vector<float> c = cache2->Download();
  for (int p = 0; p < 8; ++p) EXPECT_EQ(c[p], 10.0f * (p + 1) + p) << "slot " << p;
  EXPECT_EQ(m->Report().rebinds, 1);
  EXPECT_EQ(m->Report().captures, 1);
  EXPECT_EQ(m->Report().verified_launches, verified + 4);
  EXPECT_EQ(m->Report().verify_failures, 0);
  EXPECT_EQ(logs_.Count("verify_skipped"), 0);
}

// A body that takes an input it never names in a node (a decode step's
// `cache_position`, which transformers 5 ignores; Note [Inputs no node
// names], graph/binding/direct_form.cc) keeps its direct form, which copies
// that input in, and a weight move rewrites the graph instead of capturing
// it again. Before, the whole graph was staged for that input and every
// weight sync of an RL loop captured again.
TEST_F(RebindTest, AnInputTheBodyNeverNamesKeepsTheDirectFormAndRebinds) {
  MethodSpec spec;
  spec.name = "unnamed_input";
  const Current* w = &cur_;
  spec.fn = [w](Call& c) -> Status {  // input 1 is taken and never read
    ENCORE_RETURN_IF_ERROR(FirstHalf(c, w));
    return SecondHalf(c, w);
  };
  spec.constants = Listed(*weights_);
  MethodFlags f;
  f.warmup_calls = 1;
  spec.flags = f;
  auto made = mgr_->Register(std::move(spec));
  ASSERT_TRUE(made.ok()) << made.status();
  Method* m = *made;
  DeviceBuffer<float> pos(kRows);
  pos.Fill(3.0f);
  auto run = [&](float seed) {
    std::vector<float> v(kN);
    for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<float>(i);
    xa_.Upload(v);
    TensorRef in[2] = {{xa_.get(), DType::kFloat32, {kRows, kCols}, {}}, {pos.get(), DType::kFloat32, {kRows}, {}}};
    TensorRef out{ya_.get(), DType::kFloat32, {kRows, kCols}, {}};
    Status s = m->Run({in, 2}, {&out, 1}, this->s());
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(cudaStreamSynchronize(this->s()), cudaSuccess);
    std::vector<float> got = ya_.Download();
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(got[i], v[i] + weights_->h1[kCols + i % kCols] + weights_->h2[i % kCols]) << "element " << i;
    }
  };
  run(1.0f);  // warmup
  run(2.0f);  // capture
  run(3.0f);  // replay
  MethodReport r = m->Report();
  ASSERT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  ASSERT_TRUE(MoveWeights(m, 2.0f).ok());
  run(4.0f);
  run(5.0f);
  r = m->Report();
  EXPECT_EQ(r.rebinds, 1) << r.ToJson();
  EXPECT_EQ(r.captures, 1) << r.ToJson();
  EXPECT_EQ(r.replays, 3) << r.ToJson();
  EXPECT_EQ(r.eager_calls, 0) << r.ToJson();
}

}  // namespace
}  // namespace encore
