// SPDX-License-Identifier: Apache-2.0
// Manager::Sleep and Wake: the device memory behind the graphs (static
// buffers, intermediates, scratch) is given back, measured with
// cudaMemGetInfo, while the executables and their addresses are kept; after
// a wake the graphs replay with no capture and give the results of eager
// runs. A call while asleep wakes the manager first.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
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

constexpr size_t kMiB = size_t{1} << 20;
constexpr int64_t kCols = 1024;
constexpr size_t kScratchBytes = 64 * kMiB;

size_t FreeBytes() {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  size_t free_b = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
  return free_b;
}

Status Check(cudaError_t e, const char* what) { return e == cudaSuccess ? OkStatus() : CudaStatus(e, what); }

// out = in * 2 + 1 through 64 MiB of scratch from Call::Allocate (the
// graph's intermediates), written at its end, which a wake maps anew.
Status ScratchBody(Call& c) {
  const int64_t n = c.input(0).numel();
  ENCORE_ASSIGN_OR_RETURN(void* scratch, c.Allocate(kScratchBytes));
  float* tmp = static_cast<float*>(scratch) + (kScratchBytes / sizeof(float) - n);
  ENCORE_RETURN_IF_ERROR(
      Check(testing::LaunchAffine(static_cast<const float*>(c.input(0).data), tmp, 2.0f, 0.0f, n, c.stream()), "a"));
  return Check(testing::LaunchAffine(tmp, static_cast<float*>(c.output(0).data), 1.0f, 1.0f, n, c.stream()), "b");
}

class SleepTest : public testing::GpuManagerTest {
 public:
  Method* Register(const std::string& name, MethodFlags f = {}) {
    MethodSpec spec;
    spec.name = name;
    spec.fn = ScratchBody;
    spec.constants = std::vector<Constant>{};
    f.warmup_calls = 1;
    spec.flags = f;
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  void RunAndCheck(Method* m, float seed, int64_t rows = 4) {
    std::vector<float> v(rows * kCols);
    for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<float>(i % 1000);
    x_.Upload(v);
    y_.Fill(-1.0f);
    TensorRef in{x_.get(), DType::kFloat32, {rows, kCols}, {}}, out{y_.get(), DType::kFloat32, {rows, kCols}, {}};
    Status s = m->Run({&in, 1}, {&out, 1}, this->s());
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(cudaStreamSynchronize(this->s()), cudaSuccess);
    std::vector<float> got = y_.Download();
    for (int64_t i = 0; i < rows * kCols; ++i) ASSERT_EQ(got[i], 2.0f * v[i] + 1.0f) << "element " << i;
  }

  DeviceBuffer<float> x_{8 * kCols}, y_{8 * kCols};
};

TEST_F(SleepTest, SleepGivesTheGraphsMemoryBackAndWakeReplaysWithNoCapture) {
  Method* m = Register("big");
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 3; ++call) RunAndCheck(m, 1.0f * call);
  const MethodReport before = m->Report();
  ASSERT_EQ(before.captures, 1);
  ASSERT_GE(before.memory.reserved_bytes, kScratchBytes);
  const size_t free_awake = FreeBytes();
  StatusOr<int64_t> given = mgr_->Sleep();
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_TRUE(mgr_->asleep());
  EXPECT_GE(static_cast<size_t>(*given), kScratchBytes);
  const size_t free_asleep = FreeBytes();
  if (!testing::UnderSanitizer()) {
    EXPECT_GE(free_asleep, free_awake + static_cast<size_t>(*given) - 2 * kMiB)
        << "cudaMemGetInfo saw " << (free_asleep - free_awake) << " bytes come back of " << *given;
  }
  EXPECT_EQ(logs_.Count("sleep"), 1);
  // Asleep again: nothing more to give back.
  StatusOr<int64_t> again = mgr_->Sleep();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  ASSERT_TRUE(mgr_->Wake().ok());
  EXPECT_FALSE(mgr_->asleep());
  if (!testing::UnderSanitizer()) {
    EXPECT_LE(FreeBytes(), free_asleep - static_cast<size_t>(*given) + 2 * kMiB);
  }
  for (int call = 0; call < 3; ++call) RunAndCheck(m, 10.0f + call);
  const MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, before.replays + 3);
  EXPECT_EQ(r.memory.reserved_bytes, before.memory.reserved_bytes);
  ASSERT_TRUE(mgr_->Wake().ok()) << "a wake when awake does nothing";
}

TEST_F(SleepTest, ACallWhileAsleepWakesTheManagerFirst) {
  Method* a = Register("a");
  Method* b = Register("b");
  ASSERT_TRUE(a && b);
  for (int call = 0; call < 3; ++call) {
    RunAndCheck(a, 1.0f * call);
    RunAndCheck(b, 2.0f * call);
  }
  ASSERT_TRUE(mgr_->Sleep().ok());
  RunAndCheck(a, 7.0f);  // wakes the manager, then replays
  EXPECT_FALSE(mgr_->asleep());
  auto ev = logs_.Find("wake");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->field("reason"), "call");
  EXPECT_EQ(ev->field("method"), "a");
  RunAndCheck(b, 8.0f);  // b was woken with the manager
  EXPECT_EQ(a->Report().captures, 1);
  EXPECT_EQ(b->Report().captures, 1);
  EXPECT_EQ(logs_.Count("wake"), 1);
  // A method that never ran, called while asleep, wakes it too.
  ASSERT_TRUE(mgr_->Sleep().ok());
  Method* c = Register("c");
  ASSERT_NE(c, nullptr);
  RunAndCheck(c, 3.0f);
  EXPECT_FALSE(mgr_->asleep());
  RunAndCheck(a, 9.0f);
  EXPECT_EQ(a->Report().captures, 1);
}

TEST_F(SleepTest, PaddedBucketsAndPiecesReplayAfterAWake) {
  MethodFlags f;
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = {2, 4, 8};
  Method* m = Register("padded", f);
  ASSERT_NE(m, nullptr);
  for (int64_t rows : {8, 3, 5, 2, 8, 4, 1}) RunAndCheck(m, 1.0f * rows, rows);
  const int64_t captures = m->Report().captures;
  ASSERT_TRUE(mgr_->Sleep().ok());
  ASSERT_TRUE(mgr_->Wake().ok());
  for (int64_t rows : {1, 8, 3, 5, 2, 7}) RunAndCheck(m, 2.0f * rows, rows);
  EXPECT_EQ(m->Report().captures, captures);
}

TEST_F(SleepTest, ReleaseWhileAsleepFreesTheGraphsAndTheMethodCapturesAgain) {
  Method* m = Register("released");
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 3; ++call) RunAndCheck(m, 1.0f * call);
  ASSERT_TRUE(mgr_->Sleep().ok());
  ASSERT_TRUE(m->Release().ok());
  EXPECT_EQ(m->Report().memory.reserved_bytes, 0u);
  for (int call = 0; call < 3; ++call) RunAndCheck(m, 5.0f * call);
  EXPECT_EQ(m->Report().captures, 2);
  EXPECT_FALSE(mgr_->asleep());
}

}  // namespace
}  // namespace encore
