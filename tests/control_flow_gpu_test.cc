// SPDX-License-Identifier: Apache-2.0
// Call::If and Call::While in methods: in a capture they become conditional
// nodes that follow the device flag on every replay (no host read), eager
// calls agree with the graph, a loop whose flag never turns false stops at
// its bound and the next Run says so, and they nest.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/graph/manager.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/manager_fixture.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

Status Ok(cudaError_t e, const char* what) { return e == cudaSuccess ? OkStatus() : CudaStatus(e, what); }

class ControlFlowTest : public testing::GpuManagerTest {
 protected:

  Method* Register(const std::string& name, MethodFn fn) {
    MethodSpec spec;
    spec.name = name;
    spec.fn = std::move(fn);
    spec.constants = std::vector<Constant>{{"n", n_.get(), sizeof(int)}, {"more", more_.get(), sizeof(bool)}};
    MethodFlags f;
    f.warmup_calls = 2;
    spec.flags = f;
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  // Inputs x (one float) and count (one int); output y (one float).
  StatusOr<float> RunOnce(Method* m, float x, int count) {
    x_.Upload(std::vector<float>{x});
    count_.Upload(std::vector<int>{count});
    TensorRef ins[] = {{x_.get(), DType::kFloat32, {1}, {}}, {count_.get(), DType::kInt32, {1}, {}}};
    TensorRef out{y_.get(), DType::kFloat32, {1}, {}};
    Status st = m->Run(ins, {&out, 1}, s());
    EXPECT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    if (!st.ok()) return st;
    return y_.Download()[0];
  }

  // y = 0; n = count; more = n > 0; while (more) { y += x; --n; more = n > 0 }
  MethodFn Loop(int64_t bound) {
    return [this, bound](Call& c) -> Status {
      float* y = static_cast<float*>(c.output(0).data);
      ENCORE_RETURN_IF_ERROR(Ok(cudaMemsetAsync(y, 0, sizeof(float), c.stream()), "memset"));
      ENCORE_RETURN_IF_ERROR(Ok(cudaMemcpyAsync(n_.get(), c.input(1).data, sizeof(int), cudaMemcpyDeviceToDevice,
                                                c.stream()),
                                "copy"));
      ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchIsPositive(n_.get(), more_.get(), c.stream()), "positive"));
      return c.While(more_.get(), [this](Call& b) {
        return Ok(testing::LaunchCountdown(n_.get(), more_.get(), static_cast<const float*>(b.input(0).data),
                                           static_cast<float*>(b.output(0).data), b.stream()),
                  "countdown");
      }, bound);
    };
  }

  DeviceBuffer<float> x_{1}, y_{1};
  DeviceBuffer<int> count_{1}, n_{1};
  DeviceBuffer<bool> more_{1};
};

TEST_F(ControlFlowTest, AWhileLoopRunsAsManyTimesAsTheDeviceSaysOnEveryReplay) {
  Method* m = Register("loop", Loop(100));
  const int counts[] = {3, 1, 0, 1, 3, 7, 64, 0, 5};
  for (size_t i = 0; i < std::size(counts); ++i) {
    StatusOr<float> y = RunOnce(m, 1.5f, counts[i]);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(*y, 1.5f * counts[i]) << "call " << i + 1 << " count " << counts[i];
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kReplay) << r.graphs_off_reason;
  EXPECT_EQ(r.replays, static_cast<int64_t>(std::size(counts)) - 3);
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("conditional nodes"), std::string::npos) << r.binding_reason;
}

TEST_F(ControlFlowTest, ARunawayLoopStopsAtItsBoundAndTheNextRunSaysSo) {
  Method* m = Register("runaway", Loop(4));
  for (int call = 1; call <= 4; ++call) {
    StatusOr<float> y = RunOnce(m, 1.0f, call == 4 ? 10 : 2);  // call 4 replays
    ASSERT_TRUE(y.ok()) << y.status();
    if (call == 4) {
      EXPECT_EQ(*y, 4.0f);  // stopped at the bound
    }
  }
  StatusOr<float> next = RunOnce(m, 1.0f, 2);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(next.status().message().find("method 'runaway': a While loop reached its bound of 4 iterations"),
            std::string_view::npos)
      << next.status();
  StatusOr<float> after = RunOnce(m, 1.0f, 2);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, 2.0f);
}

TEST_F(ControlFlowTest, AnEagerRunawayIsReportedTheSameWay) {
  Method* m = Register("eager_runaway", Loop(3));
  ASSERT_TRUE(RunOnce(m, 1.0f, 9).ok());  // a warmup: eager
  StatusOr<float> next = RunOnce(m, 1.0f, 1);
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find("bound of 3 iterations"), std::string_view::npos) << next.status();
}

TEST_F(ControlFlowTest, AnIfFollowsTheDeviceFlagOnEveryReplay) {
  DeviceBuffer<bool> flag(1);
  Method* m = Register("branch", [&flag](Call& c) -> Status {
    const float* x = static_cast<const float*>(c.input(0).data);
    float* y = static_cast<float*>(c.output(0).data);
    ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchAffine(x, y, 1.0f, 0.0f, 1, c.stream()), "copy"));
    ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchGreater(x, 0.0f, flag.get(), c.stream()), "greater"));
    return c.If(flag.get(), [x, y](Call& b) {
      return Ok(testing::LaunchAffine(x, y, 10.0f, 0.0f, 1, b.stream()), "then");
    });
  });
  const float xs[] = {1, -1, 2, -3, 4, -5, 6};
  for (float x : xs) {
    StatusOr<float> y = RunOnce(m, x, 0);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(*y, x > 0 ? 10.0f * x : x) << "x " << x;
  }
  EXPECT_EQ(m->Report().phase, MethodPhase::kReplay) << m->Report().graphs_off_reason;
}

// A body that breaks its own capture (a stream sync, legal eagerly) fails
// the capture: the call still returns the right value, eagerly, and the
// graph is given up rather than destroyed (destroying it crashed the driver
// inside cuGraphDestroy on the H200, driver 580).
TEST_F(ControlFlowTest, AnIfBodyThatBreaksItsOwnCaptureRunsEagerly) {
  DeviceBuffer<bool> flag(1);
  Method* m = Register("breaks", [&flag](Call& c) -> Status {
    const float* x = static_cast<const float*>(c.input(0).data);
    float* y = static_cast<float*>(c.output(0).data);
    ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchAffine(x, y, 1.0f, 0.0f, 1, c.stream()), "copy"));
    ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchGreater(x, 0.0f, flag.get(), c.stream()), "greater"));
    return c.If(flag.get(), [x, y](Call& b) {
      (void)cudaStreamSynchronize(b.stream());  // invalidates the body's capture
      return Ok(testing::LaunchAffine(x, y, 10.0f, 0.0f, 1, b.stream()), "then");
    });
  });
  const float xs[] = {1, -1, 2, -3, 4, -5, 6};
  for (float x : xs) {
    StatusOr<float> y = RunOnce(m, x, 0);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(*y, x > 0 ? 10.0f * x : x) << "x " << x;
  }
  const MethodReport r = m->Report();
  EXPECT_GE(r.capture_failures, 1) << r.graphs_off_reason;
  EXPECT_EQ(r.replays, 0);
}

TEST_F(ControlFlowTest, AnIfInsideAWhileNests) {
  DeviceBuffer<bool> odd(1);
  // Adds x on every iteration and 100 more on iterations where n (after the
  // countdown) is odd: with count 5, n goes 4, 3, 2, 1, 0 -> 2 odd.
  Method* m = Register("nested", [this, &odd](Call& c) -> Status {
    float* y = static_cast<float*>(c.output(0).data);
    ENCORE_RETURN_IF_ERROR(Ok(cudaMemsetAsync(y, 0, sizeof(float), c.stream()), "memset"));
    ENCORE_RETURN_IF_ERROR(Ok(cudaMemcpyAsync(n_.get(), c.input(1).data, sizeof(int), cudaMemcpyDeviceToDevice,
                                              c.stream()),
                              "copy"));
    ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchIsPositive(n_.get(), more_.get(), c.stream()), "positive"));
    return c.While(more_.get(), [this, &odd, y](Call& b) -> Status {
      ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchCountdown(n_.get(), more_.get(),
                                                          static_cast<const float*>(b.input(0).data), y, b.stream()),
                                "countdown"));
      ENCORE_RETURN_IF_ERROR(Ok(testing::LaunchIsOdd(n_.get(), odd.get(), b.stream()), "odd"));
      return b.If(odd.get(), [y](Call& t) { return Ok(testing::LaunchAddScalar(y, 100.0f, t.stream()), "add"); });
    }, 50);
  });
  for (int count : {5, 2, 5, 0, 3, 5}) {
    StatusOr<float> y = RunOnce(m, 1.0f, count);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(*y, count + 100.0f * (count / 2)) << "count " << count;
  }
  EXPECT_EQ(m->Report().phase, MethodPhase::kReplay) << m->Report().graphs_off_reason;
}

TEST_F(ControlFlowTest, ABoundOfZeroIsRefused) {
  Method* m = Register("zero", Loop(0));
  StatusOr<float> y = RunOnce(m, 1.0f, 1);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(y.status().message().find("max_iterations > 0"), std::string_view::npos) << y.status();
}

}  // namespace
}  // namespace encore
