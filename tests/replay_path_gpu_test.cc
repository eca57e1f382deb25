// SPDX-License-Identifier: Apache-2.0
// The replay path's cost in CUDA calls, and the faults around a capture that
// are not the method's own: a stale error left by other code, a real out of
// memory at capture, a body that calls back into its own method.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/log.h"
#include "encore/graph/manager.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr size_t kN = 1024;

TensorRef F32(void* p) { return TensorRef{p, DType::kFloat32, {static_cast<int64_t>(kN)}, {}}; }

class ReplayPathGpuTest : public testing::GpuStreamTest {
 protected:
  Method* Register(MethodFlags flags, MethodFn fn = nullptr) {
    ManagerOptions o;
    o.logger = logs_.logger();
    auto m = Manager::Create(o);
    EXPECT_TRUE(m.ok()) << m.status();
    manager_ = *std::move(m);
    MethodSpec spec;
    spec.name = "forward";
    spec.constants = std::vector<Constant>{};
    spec.flags = flags;
    spec.fn = fn ? std::move(fn) : [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
    auto r = manager_->Register(std::move(spec));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }
  // Checks y == 2 * x + 1 for x = base + i.
  void Expect(DeviceBuffer<float>& y, float base) {
    ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    std::vector<float> got = y.Download();
    for (size_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2.0f * (base + i) + 1.0f) << "element " << i;
  }
  void Fill(DeviceBuffer<float>& x, float base) {
    std::vector<float> v(kN);
    for (size_t i = 0; i < kN; ++i) v[i] = base + i;
    x.Upload(v);
  }

  LogCapture logs_;
  std::unique_ptr<Manager> manager_;
};

MethodFlags CaptureFirst() {
  MethodFlags f;
  f.warmup_calls = 0;
  return f;
}

// docs/design.md: a replay whose buffers did not move (or recur) makes two
// CUDA calls, cudaGetDevice and cudaGraphLaunch, and nothing else.
TEST_F(ReplayPathGpuTest, AReplayIsOneGetDeviceAndOneGraphLaunch) {
  Method* m = Register(CaptureFirst());
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x1(kN), y1(kN), x2(kN), y2(kN);
  Fill(x1, 1.0f);
  Fill(x2, 500.0f);
  TensorRef in1 = F32(x1.get()), out1 = F32(y1.get()), in2 = F32(x2.get()), out2 = F32(y2.get());
  // Capture, then let both address sets earn an executable of their own.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(m->Run({&in1, 1}, {&out1, 1}, s()).ok());
    ASSERT_TRUE(m->Run({&in2, 1}, {&out2, 1}, s()).ok());
  }
  ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
  constexpr int kCalls = 100;
  CudaFaultInjector counter;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(m->Run({&in1, 1}, {&out1, 1}, s()).ok());
    ASSERT_TRUE(m->Run({&in2, 1}, {&out2, 1}, s()).ok());
  }
  // The graph's own record node marks its completion: no other call.
  for (int c = 0; c < static_cast<int>(CudaCall::kCount); ++c) {
    const CudaCall call = static_cast<CudaCall>(c);
    const bool per_call = call == CudaCall::kGraphLaunch || call == CudaCall::kGetDevice;
    EXPECT_EQ(counter.Count(call), per_call ? 2 * kCalls : 0) << CudaCallName(call);
  }
  Expect(y1, 1.0f);
  Expect(y2, 500.0f);
  EXPECT_EQ(m->Report().replays, 8 - 1 + 2 * kCalls);
}

// Note [replay path]: a held replay is let go by everything that changes
// what a call must do. Each change is followed by a call like the held one,
// whose result must be the method's and whose path is the change's own.
TEST_F(ReplayPathGpuTest, AHeldReplayIsLetGoByEveryChangeOfTheMethod) {
  Method* m = Register(CaptureFirst());
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(kN), y(kN), x2(kN);
  Fill(x, 1.0f);
  Fill(x2, 9.0f);
  TensorRef in = F32(x.get()), out = F32(y.get()), in2 = F32(x2.get());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());  // capture, then held
  Expect(y, 1.0f);
  // A moved input: the held piece binds it, and the result follows it.
  ASSERT_TRUE(m->Run({&in2, 1}, {&out, 1}, s()).ok());
  Expect(y, 9.0f);
  EXPECT_EQ(m->Report().captures, 1);
  // Release: the next call captures again.
  ASSERT_TRUE(m->Release().ok());
  y.Fill(0.0f);
  ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
  Expect(y, 1.0f);
  EXPECT_EQ(m->Report().captures, 2);
  ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());  // held again
  // Sleep: the next call wakes the manager first, then replays.
  ASSERT_TRUE(manager_->Sleep().ok());
  ASSERT_TRUE(manager_->asleep());
  y.Fill(0.0f);
  ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
  EXPECT_FALSE(manager_->asleep());
  Expect(y, 1.0f);
  // Another stream: the call waits for the last launch there (slower path).
  cudaStream_t other = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  y.Fill(0.0f);
  ASSERT_TRUE(m->Run({&in2, 1}, {&out, 1}, other).ok());
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(other));
  ENCORE_CUDA_ASSERT(cudaStreamDestroy(other));
  Expect(y, 9.0f);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.eager_calls, 0);
  EXPECT_EQ(r.replays, 6);
}

int g_launches = 0;
int g_launches_in_log_scope = 0;

cudaError_t LaunchNotingLogScope(cudaGraphExec_t exec, cudaStream_t stream) {
  ++g_launches;
  if (!ScopedMethod().empty()) ++g_launches_in_log_scope;
  return RealCudaApi().GraphLaunch(exec, stream);
}

// A replay destroys no owner, so it opens no log scope (two thread-local
// stores per call); the capture call, which may destroy owners, does.
TEST_F(ReplayPathGpuTest, AReplayOpensNoLogScope) {
  Method* m = Register(CaptureFirst());
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(kN), y(kN);
  Fill(x, 3.0f);
  TensorRef in = F32(x.get()), out = F32(y.get());
  ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());  // the capture
  CudaApi noting = RealCudaApi();
  noting.GraphLaunch = &LaunchNotingLogScope;
  const CudaApi* previous = internal::g_cuda_api.exchange(&noting);
  g_launches = g_launches_in_log_scope = 0;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
  const int replays_in_scope = g_launches_in_log_scope;
  const int replays = g_launches;
  ASSERT_TRUE(m->Release().ok());
  ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());  // captures again, inside its scope
  internal::g_cuda_api.store(previous);
  EXPECT_EQ(replays, 10);
  EXPECT_EQ(replays_in_scope, 0);
  EXPECT_GE(g_launches - replays, 1);  // the first launch, and the probe's
  EXPECT_EQ(g_launches_in_log_scope, g_launches - replays) << "the capture call's launches run in its log scope";
  Expect(y, 3.0f);
}

// An error that other code left pending before the capture call is not
// encore's: the capture goes on, and the error is logged as pre-existing.
TEST_F(ReplayPathGpuTest, AStaleErrorFromOtherCodeDoesNotFailTheCapture) {
  Method* m = Register(CaptureFirst());
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(kN), y(kN);
  Fill(x, 3.0f);
  void* huge = nullptr;
  ASSERT_EQ(cudaMalloc(&huge, size_t{1} << 60), cudaErrorMemoryAllocation);  // left in the last-error slot
  TensorRef in = F32(x.get()), out = F32(y.get());
  ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
  Expect(y, 3.0f);
  MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.capture_failures, 0);
  EXPECT_EQ(r.graphs_off_reason, "");
  auto ev = logs_.Find("stale_cuda_error");
  ASSERT_TRUE(ev.has_value());
  EXPECT_NE(ev->line.find("cudaErrorMemoryAllocation"), std::string::npos) << ev->line;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A real out-of-memory inside the capture (the body's scratch) turns graphs
// off, and the eager retry of the same call succeeds: the failed capture's
// error does not reach the body's own launch check.
TEST_F(ReplayPathGpuTest, ARealOutOfMemoryAtCaptureRetriesEagerlyAndRight) {
  Method* m = Register(CaptureFirst(), [](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) {
      StatusOr<void*> scratch = c.Allocate(size_t{1} << 50);  // far beyond an H200
      if (!scratch.ok()) return scratch.status();
    }
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  DeviceBuffer<float> x(kN), y(kN);
  Fill(x, 7.0f);
  TensorRef in = F32(x.get()), out = F32(y.get());
  Status st = m->Run({&in, 1}, {&out, 1}, s());
  ASSERT_TRUE(st.ok()) << st;
  Expect(y, 7.0f);
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.eager_calls, 1);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_NE(r.graphs_off_reason.find("capture failed"), std::string::npos) << r.graphs_off_reason;
  EXPECT_EQ(r.memory.live_bytes, 0u);
  // Later calls stay right.
  Fill(x, 9.0f);
  ASSERT_TRUE(m->Run({&in, 1}, {&out, 1}, s()).ok());
  Expect(y, 9.0f);
}

// A body that calls its own method's Run, Release or Synchronize gets an
// error instead of a deadlock; Report from inside the body works.
TEST_F(ReplayPathGpuTest, ABodyCallingItsOwnMethodGetsAnError) {
  Method* self = nullptr;
  std::vector<Status> inner;
  int64_t calls_seen = -1;
  self = Register(MethodFlags{}, [&](Call& c) -> Status {
    TensorRef in = c.input(0), out = c.output(0);
    inner.push_back(self->Run({&in, 1}, {&out, 1}, c.stream()));
    inner.push_back(self->Release());
    inner.push_back(self->Synchronize(c.stream()));
    calls_seen = self->Report().calls;
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(self, nullptr);
  DeviceBuffer<float> x(kN), y(kN);
  Fill(x, 2.0f);
  TensorRef in = F32(x.get()), out = F32(y.get());
  ASSERT_TRUE(self->Run({&in, 1}, {&out, 1}, s()).ok());
  Expect(y, 2.0f);
  ASSERT_EQ(inner.size(), 3u);
  for (const Status& st : inner) {
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
    EXPECT_NE(st.message().find("from inside the method's own body"), std::string::npos) << st;
  }
  EXPECT_EQ(calls_seen, 1);
  EXPECT_EQ(self->Report().warmup_calls, 1);
}

}  // namespace
}  // namespace encore
