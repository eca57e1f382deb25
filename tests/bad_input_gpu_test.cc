// SPDX-License-Identifier: Apache-2.0
// Bad input on a real GPU, once a graph is captured: a call that must be
// rejected is an InvalidArgument naming the tensor, launches nothing,
// changes no counter, and the next valid call still replays correctly.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "encore/tests/gpu_test_util.h"
#include "encore/tests/manager_fixture.h"
#include "encore/tests/affine_call.h"
#include "encore/graph/manager.h"
#include "encore/tests/device_buffer.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr float kSentinel = -12345.0f;
constexpr size_t kN = 32;
// Rank 8, kN elements.
const Shape kShape8{1, 2, 1, 2, 1, 2, 1, 4};

class BadInputGpuTest : public testing::GpuManagerTest {
 protected:
  // A logger with no sink: refusals are expected here, and many.
  ManagerOptions Options() override {
    ManagerOptions o;
    o.logger = std::make_shared<spdlog::logger>("quiet");
    return o;
  }

  // out = in * 2 + 1, warming up once.
  Method* Register(ShapePolicy on_new_shape) {
    MethodSpec spec;
    spec.name = "forward";
    spec.constants = std::vector<Constant>{};
    MethodFlags f;
    f.warmup_calls = 1;
    f.on_new_shape = on_new_shape;
    spec.flags = f;
    spec.fn = [](Call& c) -> Status {
      if (c.input(0).numel() != c.output(0).numel()) return InvalidArgumentError("affine: numel differs");
      return testing::AffineCall(c, 2.0f, 1.0f);
    };
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  // Runs `method` on in = base + i over kN elements given `shape`, and
  // checks every output element.
  void RunAndCheck(Method* method, float base, const Shape& shape) {
    std::vector<float> h(kN);
    for (size_t i = 0; i < kN; ++i) h[i] = base + static_cast<float>(i);
    in_.Upload(h);
    out_.Fill(kSentinel);
    TensorRef i{in_.get(), DType::kFloat32, shape, {}};
    TensorRef o{out_.get(), DType::kFloat32, shape, {}};
    Status st = method->Run({&i, 1}, {&o, 1}, s());
    ASSERT_TRUE(st.ok()) << st;
    ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
    std::vector<float> got = out_.Download();
    for (size_t k = 0; k < kN; ++k) ASSERT_EQ(got[k], (base + static_cast<float>(k)) * 2 + 1) << "element " << k;
  }

  // Runs `method` with `in_shape` / `out_shape` over the same buffers and
  // expects `message`, an untouched output and unchanged counters.
  void ExpectRejected(Method* method, const Shape& in_shape, const Shape& out_shape, const std::string& message) {
    const MethodReport before = method->Report();
    out_.Fill(kSentinel);
    TensorRef i{in_.get(), DType::kFloat32, in_shape, {}};
    TensorRef o{out_.get(), DType::kFloat32, out_shape, {}};
    Status st = method->Run({&i, 1}, {&o, 1}, s());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_EQ(st.message(), message);
    ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
    std::vector<float> got = out_.Download();
    for (size_t k = 0; k < kN; ++k) ASSERT_EQ(got[k], kSentinel) << "the rejected call wrote element " << k;
    const MethodReport after = method->Report();
    EXPECT_EQ(after.calls, before.calls);
    EXPECT_EQ(after.replays, before.replays);
    EXPECT_EQ(after.captures, before.captures);
    EXPECT_EQ(after.recaptures, before.recaptures);
    EXPECT_EQ(after.eager_calls, before.eager_calls);
    EXPECT_EQ(after.refusals, before.refusals);
    EXPECT_EQ(after.phase, MethodPhase::kReplay);
  }

  DeviceBuffer<float> in_{kN};
  DeviceBuffer<float> out_{kN};
};

// A ninth dim is dropped from Shape, so its first eight equal the capture's
// (here with the same element count, the case a byte check cannot see): the
// replay fast path used to launch the graph and return OK.
TEST_F(BadInputGpuTest, NineDimsAfterARankEightCaptureAreRejected) {
  Method* m = Register(ShapePolicy::kRefuse);
  ASSERT_NE(m, nullptr);
  for (int call = 0; call < 3; ++call) ASSERT_NO_FATAL_FAILURE(RunAndCheck(m, call * 100.0f, kShape8));
  ASSERT_EQ(m->Report().captures, 1);
  ASSERT_EQ(m->Report().replays, 1);
  const Shape nine{1, 2, 1, 2, 1, 2, 1, 4, 1};
  ASSERT_TRUE(nine.overflowed());
  ASSERT_NO_FATAL_FAILURE(ExpectRejected(m, nine, kShape8, "method 'forward': input 0 has more than 8 dims"));
  ASSERT_NO_FATAL_FAILURE(ExpectRejected(m, kShape8, nine, "method 'forward': output 0 has more than 8 dims"));
  ASSERT_NO_FATAL_FAILURE(RunAndCheck(m, 1000.0f, kShape8));
  EXPECT_EQ(m->Report().replays, 2);
  EXPECT_EQ(m->Report().captures, 1);
}

// Sizes whose products wrap: under kRecapture such a call used to pass
// validation and be captured with a wrapped (tiny) static buffer.
TEST_F(BadInputGpuTest, SizesWhoseByteCountOverflowsAreRejectedBeforeAnyCapture) {
  Method* m = Register(ShapePolicy::kRecapture);
  ASSERT_NE(m, nullptr);
  const Shape flat{static_cast<int64_t>(kN)};
  for (int call = 0; call < 3; ++call) ASSERT_NO_FATAL_FAILURE(RunAndCheck(m, call * 100.0f, flat));
  ASSERT_EQ(m->Report().captures, 1);
  const Shape wraps_to_zero{int64_t{1} << 32, int64_t{1} << 32};
  ASSERT_NO_FATAL_FAILURE(ExpectRejected(
      m, wraps_to_zero, flat,
      "method 'forward': input 0 has shape (4294967296,4294967296) whose byte size overflows int64"));
  const Shape wraps_negative{INT64_MAX, 2};
  ASSERT_NO_FATAL_FAILURE(ExpectRejected(
      m, flat, wraps_negative,
      "method 'forward': output 0 has shape (9223372036854775807,2) whose byte size overflows int64"));
  ASSERT_NO_FATAL_FAILURE(RunAndCheck(m, 1000.0f, flat));
  EXPECT_EQ(m->Report().replays, 2);
  EXPECT_EQ(m->Report().captures, 1);
  EXPECT_EQ(m->Report().recaptures, 0);
}

}  // namespace
}  // namespace encore
