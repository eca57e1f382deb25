// SPDX-License-Identifier: Apache-2.0
// Graph memory through the manager, with failures injected at every stage of
// a capture: the call still returns the eager result, graphs go off, exactly
// what was allocated is freed once, and device memory returns to its level.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "encore/allocator/internal/graph_arena.h"
#include "encore/core/internal/cuda_api.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/graph/manager.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

class GraphArenaGpuTest : public testing::GpuStreamTest {};

constexpr size_t kScratchBytes = 3 << 20;     // each call's scratch
constexpr size_t kCaptureExtra = 5 << 20;     // more, during capture only
constexpr int64_t kN = 4096;

// compute-sanitizer allocates device memory of its own while the process
// runs (racecheck as kernels run), so cudaMemGetInfo's totals move without
// encore: under it the arena's own counters are checked, not the device's.
bool DeviceTotalsMeasurable() { return !encore::testing::UnderSanitizer(); }

size_t UsedBytes() {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  size_t free_b = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
  return total - free_b;
}

// out = in * 2 + 1, computed through scratch from Call::Allocate; during
// capture it also takes a buffer larger than anything warmup used, so the
// capture has to allocate.
MethodSpec ScratchMethod(bool extra_in_capture) {
  MethodSpec spec;
  spec.name = "scratchy";
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 2;
  f.checks = CheckMode::kOff;  // no check sequence counter: only arena memory
  spec.flags = f;
  spec.fn = [extra_in_capture](Call& c) -> Status {
    ENCORE_ASSIGN_OR_RETURN(void* scratch, c.Allocate(kScratchBytes));
    if (extra_in_capture && c.kind() == CallKind::kCapture) {
      ENCORE_ASSIGN_OR_RETURN(void* more, c.Allocate(kCaptureExtra));
      (void)more;
    }
    float* tmp = static_cast<float*>(scratch);
    const int64_t n = c.input(0).numel();
    cudaError_t e = testing::LaunchAffine(static_cast<const float*>(c.input(0).data), tmp, 2.0f, 0.0f, n, c.stream());
    if (e == cudaSuccess) e = testing::LaunchAffine(tmp, static_cast<float*>(c.output(0).data), 1.0f, 1.0f, n, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "LaunchAffine");
  };
  return spec;
}

struct FailureCase {
  const char* name;
  CudaCall call;
  int nth;
  cudaError_t error;
  bool extra_in_capture;
  const char* stage;
  int times = 1;  // consecutive calls failed from the nth on
};

class InjectedCaptureFailureTest : public testing::GpuStreamTest, public ::testing::WithParamInterface<FailureCase> {};

TEST_P(InjectedCaptureFailureTest, EagerResultNothingLeakedNothingFreedTwice) {
  const FailureCase& fc = GetParam();
  LogCapture logs;
  ManagerOptions o;
  o.logger = logs.logger();
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok());
  auto m = (*mgr)->Register(ScratchMethod(fc.extra_in_capture));
  ASSERT_TRUE(m.ok());
  const cudaStream_t s = this->s();
  DeviceBuffer<float> in(kN), out(kN);
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i);
  in.Upload(x);
  TensorRef ti{in.get(), DType::kFloat32, {kN}, {}}, to{out.get(), DType::kFloat32, {kN}, {}};
  // A method that captures and replays first, in a manager of its own: the
  // driver loads each kernel's module on its first use (lazy loading) and
  // keeps that memory, which is not what this test looks for.
  {
    auto primer_mgr = Manager::Create(o);
    ASSERT_TRUE(primer_mgr.ok());
    auto primer = (*primer_mgr)->Register(ScratchMethod(fc.extra_in_capture));
    ASSERT_TRUE(primer.ok());
    for (int k = 0; k < 5; ++k) ASSERT_TRUE((*primer)->Run({&ti, 1}, {&to, 1}, s).ok());
    ASSERT_GT((*primer)->Report().replays, 0);
  }
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE((*m)->Run({&ti, 1}, {&to, 1}, s).ok());  // warmup
  const size_t before = UsedBytes();
  out.Fill(-1.0f);
  {
    CudaFaultInjector inj;
    inj.FailNth(fc.call, fc.nth, fc.error, fc.times);
    Status st = (*m)->Run({&ti, 1}, {&to, 1}, s);
    ASSERT_TRUE(st.ok()) << fc.name << ": " << st;
    ASSERT_EQ(inj.Failed(fc.call), fc.times) << fc.name << ": the planned failure was not reached";
    // Every cudaMalloc, physical allocation and address range that
    // succeeded was freed once; a failed one never.
    EXPECT_EQ(inj.Count(CudaCall::kFree), inj.Count(CudaCall::kMalloc) - inj.Failed(CudaCall::kMalloc)) << fc.name;
    EXPECT_EQ(inj.Count(CudaCall::kDriverMemRelease),
              inj.Count(CudaCall::kDriverMemCreate) - inj.Failed(CudaCall::kDriverMemCreate))
        << fc.name;
    EXPECT_EQ(inj.Count(CudaCall::kDriverMemAddressFree),
              inj.Count(CudaCall::kDriverMemAddressReserve) - inj.Failed(CudaCall::kDriverMemAddressReserve))
        << fc.name;
  }
  std::vector<float> got = out.Download();
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2.0f * i + 1) << fc.name << " i " << i;
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.capture_failures, 1) << fc.name;
  EXPECT_EQ(r.captures, 0) << fc.name;
  EXPECT_EQ(r.phase, MethodPhase::kEager) << fc.name;
  EXPECT_NE(r.graphs_off_reason.find(fc.stage), std::string::npos) << fc.name << ": " << r.graphs_off_reason;
  EXPECT_EQ(r.memory.reserved_bytes, 0u) << fc.name;
  const size_t after = UsedBytes();
  if (DeviceTotalsMeasurable()) {
    EXPECT_LT(after > before ? after - before : before - after, size_t{1} << 20)
        << fc.name << ": device memory in use went from " << before << " to " << after;
  }
  // Later calls run eagerly and stay right.
  ASSERT_TRUE((*m)->Run({&ti, 1}, {&to, 1}, s).ok());
  EXPECT_EQ(out.Download()[10], 21.0f);
}

INSTANTIATE_TEST_SUITE_P(
    Stages, InjectedCaptureFailureTest,
    ::testing::Values(
        FailureCase{"first_launch", CudaCall::kGraphLaunch, 1, cudaErrorLaunchOutOfResources, false, "first_launch"},
        // Under binding=auto the direct form's executable is made first; when
        // it fails the piece is staged and its staged executable made: both
        // fail here.
        FailureCase{"instantiate", CudaCall::kGraphInstantiate, 1, cudaErrorMemoryAllocation, false, "instantiate", 2},
        FailureCase{"end_capture", CudaCall::kStreamEndCapture, 1, cudaErrorStreamCaptureInvalidated, false,
                    "end_capture"},
        // Slab 1's memory grows the arena before the capture; slab 2's is
        // what the capture itself needs for its extra buffer.
        FailureCase{"alloc_in_capture", CudaCall::kDriverMemCreate, 2, cudaErrorMemoryAllocation, true, "method"},
        FailureCase{"alloc_before_capture", CudaCall::kDriverMemCreate, 1, cudaErrorMemoryAllocation, false,
                    "begin_capture"},
        FailureCase{"map_in_capture", CudaCall::kDriverMemSetAccess, 2, cudaErrorMemoryAllocation, true, "method"}),
    [](const ::testing::TestParamInfo<FailureCase>& i) { return std::string(i.param.name); });

TEST_F(GraphArenaGpuTest, ReplaysNeverGrowMemory) {
  auto mgr = Manager::Create();
  ASSERT_TRUE(mgr.ok());
  auto m = (*mgr)->Register(ScratchMethod(true));
  ASSERT_TRUE(m.ok());
  const cudaStream_t s = this->s();
  DeviceBuffer<float> in(kN), out(kN), in2(kN), out2(kN);
  in.Fill(1.0f);
  in2.Fill(2.0f);
  TensorRef a{in.get(), DType::kFloat32, {kN}, {}}, ao{out.get(), DType::kFloat32, {kN}, {}};
  TensorRef b{in2.get(), DType::kFloat32, {kN}, {}}, bo{out2.get(), DType::kFloat32, {kN}, {}};
  for (int k = 0; k < 4; ++k) ASSERT_TRUE((*m)->Run({&a, 1}, {&ao, 1}, s).ok());
  const MethodReport first = (*m)->Report();
  ASSERT_EQ(first.replays, 1);
  ASSERT_GE(first.memory.reserved_bytes, kScratchBytes + kCaptureExtra);
  ASSERT_GE(first.memory.live_bytes, kScratchBytes + kCaptureExtra);
  const size_t used = UsedBytes();
  // Each call writes 3 MiB of scratch: 10,000 of them outlast 150 s under racecheck.
  const int replays = encore::testing::UnderSanitizer() ? 200 : 10000;
  for (int k = 0; k < replays; ++k) {
    bool odd = k & 1;
    ASSERT_TRUE((*m)->Run({odd ? &b : &a, 1}, {odd ? &bo : &ao, 1}, s).ok()) << k;
  }
  const MethodReport last = (*m)->Report();
  EXPECT_EQ(last.replays, replays + 1);
  EXPECT_EQ(last.memory.reserved_bytes, first.memory.reserved_bytes);
  EXPECT_EQ(last.memory.live_bytes, first.memory.live_bytes);
  EXPECT_EQ(last.memory.peak_bytes, first.memory.peak_bytes);
  if (DeviceTotalsMeasurable()) {
    EXPECT_EQ(UsedBytes(), used);
  }
  EXPECT_EQ(out.Download()[0], 3.0f);
  EXPECT_EQ(out2.Download()[0], 5.0f);
}

TEST_F(GraphArenaGpuTest, ReleaseFreesGraphMemoryAndRecaptureReusesTheSameAmount) {
  auto mgr = Manager::Create();
  ASSERT_TRUE(mgr.ok());
  auto m = (*mgr)->Register(ScratchMethod(false));
  ASSERT_TRUE(m.ok());
  const cudaStream_t s = this->s();
  DeviceBuffer<float> in(kN), out(kN);
  in.Fill(3.0f);
  TensorRef a{in.get(), DType::kFloat32, {kN}, {}}, ao{out.get(), DType::kFloat32, {kN}, {}};
  for (int k = 0; k < 2; ++k) ASSERT_TRUE((*m)->Run({&a, 1}, {&ao, 1}, s).ok());
  const size_t before_capture = UsedBytes();
  for (int k = 0; k < 20; ++k) ASSERT_TRUE((*m)->Run({&a, 1}, {&ao, 1}, s).ok());
  const size_t reserved = (*m)->Report().memory.reserved_bytes;
  ASSERT_GT(reserved, kScratchBytes);
  if (DeviceTotalsMeasurable()) {
    EXPECT_GE(UsedBytes(), before_capture + kScratchBytes);
  }
  ASSERT_TRUE((*m)->Release().ok());
  EXPECT_EQ((*m)->Report().memory.reserved_bytes, 0u);
  const size_t after_release = UsedBytes();
  if (DeviceTotalsMeasurable()) {
    EXPECT_LT(after_release > before_capture ? after_release - before_capture : before_capture - after_release,
              size_t{1} << 20);
  }
  for (int k = 0; k < 10; ++k) {
    out.Fill(0.0f);
    ASSERT_TRUE((*m)->Run({&a, 1}, {&ao, 1}, s).ok());
    EXPECT_EQ(out.Download()[kN - 1], 7.0f);
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.memory.reserved_bytes, reserved);
}

}  // namespace
}  // namespace encore

namespace encore {
namespace {

// A request near SIZE_MAX is out of memory, never an alignment that wraps
// to a few bytes and hands back a pointer.
TEST(GraphArenaSizeTest, AHugeRequestFailsInsteadOfWrapping) {
  ENCORE_REQUIRE_GPU();
  GraphArena arena;
  ASSERT_TRUE(arena.BeginCapture(1, 0).ok());
  StatusOr<void*> p = arena.AllocateCapture(std::numeric_limits<size_t>::max() - 3);
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted) << p.status();
  ASSERT_TRUE(arena.AbortCapture().ok());
  StatusOr<void*> e = arena.AllocateEager(std::numeric_limits<size_t>::max() - 3, nullptr);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(arena.stats().reserved_bytes, 0u);
}

}  // namespace
}  // namespace encore
