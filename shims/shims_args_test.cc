// SPDX-License-Identifier: Apache-2.0
// CPU tests: the shims' argument checks return before any CUDA call, so they
// run (and must give these exact messages) on a machine with no GPU. The
// fault injector counts every call through the CUDA seam to prove none was
// made.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/log.h"
#include "encore/tests/log_capture.h"
#include "encore/core/tensor.h"
#include "encore/shims/masked_copy.h"
#include "encore/shims/philox.h"
#include "encore/shims/read_scalar.h"
#include "encore/core/internal/scoped_thread_capture.h"

namespace encore::shims {
namespace {

// Never dereferenced: every call below fails validation first.
void* const kFakeDevice = reinterpret_cast<void*>(uintptr_t{0x7f0000001000});
const bool* const kFakeMask = reinterpret_cast<const bool*>(uintptr_t{0x7f0000002000});
const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x1234});

int SeamCalls(const CudaFaultInjector& inj) {
  int n = 0;
  for (int c = 0; c < static_cast<int>(CudaCall::kCount); ++c) n += inj.Count(static_cast<CudaCall>(c));
  return n;
}

class ShimsArgsTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(SeamCalls(inj_), 0) << "validation reached CUDA"; }
  CudaFaultInjector inj_;
};

void ExpectInvalid(const Status& s, const std::string& message) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message(), message);
  EXPECT_FALSE(IsCaptureRefusal(s));
}

TEST_F(ShimsArgsTest, ReadScalarNullPointer) {
  ExpectInvalid(ReadScalar<float>(nullptr, kStream).status(), "ReadScalar: device_ptr is null");
  ExpectInvalid(ReadScalar<int64_t>(nullptr, kStream).status(), "ReadScalar: device_ptr is null");
  ExpectInvalid(ReadScalar<bool>(nullptr, cudaStreamLegacy).status(), "ReadScalar: device_ptr is null");
  ExpectInvalid(ReadScalar<__half>(nullptr, kStream).status(), "ReadScalar: device_ptr is null");
}

TEST_F(ShimsArgsTest, CountNonzeroNegativeAndNull) {
  ExpectInvalid(CountNonzero(kFakeMask, -1, kStream).status(), "CountNonzero: n is negative (-1)");
  ExpectInvalid(CountNonzero(nullptr, -5, kStream).status(), "CountNonzero: n is negative (-5)");
  ExpectInvalid(CountNonzero(nullptr, 3, kStream).status(), "CountNonzero: mask is null with n = 3");
}

TEST_F(ShimsArgsTest, CountNonzeroOfNothingIsZeroWithoutTheDevice) {
  auto c = CountNonzero(nullptr, 0, kStream);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, 0);
  c = CountNonzero(kFakeMask, 0, kStream);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, 0);
}

TensorRef T(void* data, DType dtype, Shape shape, Strides strides = {}) {
  TensorRef t;
  t.data = data;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = strides;
  return t;
}

TEST_F(ShimsArgsTest, MaskedCopyShapeMismatch) {
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kFloat32, {2, 3}), kFakeMask, T(kFakeDevice, DType::kFloat32, {3, 2}),
                           kStream),
                "MaskedCopy: out has shape (2,3), src has shape (3,2)");
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kFloat32, {6}), kFakeMask, T(kFakeDevice, DType::kFloat32, {2, 3}),
                           kStream),
                "MaskedCopy: out has shape (6), src has shape (2,3)");
}

TEST_F(ShimsArgsTest, MaskedCopyDTypeMismatch) {
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kFloat32, {4}), kFakeMask, T(kFakeDevice, DType::kInt64, {4}), kStream),
                "MaskedCopy: out has dtype float32, src has dtype int64");
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kFloat16, {4}), kFakeMask, T(kFakeDevice, DType::kBFloat16, {4}),
                           kStream),
                "MaskedCopy: out has dtype float16, src has dtype bfloat16");
}

TEST_F(ShimsArgsTest, MaskedCopyNonContiguous) {
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kFloat32, {2, 3}), kFakeMask,
                           T(kFakeDevice, DType::kFloat32, {2, 3}, {1, 2}), kStream),
                "MaskedCopy: src is not contiguous (strides (1,2) for shape (2,3))");
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kInt32, {2, 3}, {6, 2}), kFakeMask,
                           T(kFakeDevice, DType::kInt32, {2, 3}), kStream),
                "MaskedCopy: out is not contiguous (strides (6,2) for shape (2,3))");
}

TEST_F(ShimsArgsTest, MaskedCopyNullPointers) {
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kFloat32, {2, 3}), nullptr, T(kFakeDevice, DType::kFloat32, {2, 3}),
                           kStream),
                "MaskedCopy: mask is null for shape (2,3)");
  ExpectInvalid(MaskedCopy(T(nullptr, DType::kFloat32, {2, 3}), kFakeMask, T(kFakeDevice, DType::kFloat32, {2, 3}),
                           kStream),
                "MaskedCopy: out has a null data pointer and shape (2,3)");
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kUInt8, {5}), kFakeMask, T(nullptr, DType::kUInt8, {5}), kStream),
                "MaskedCopy: src has a null data pointer and shape (5)");
}

TEST_F(ShimsArgsTest, MaskedCopyMisaligned) {
  void* odd = static_cast<char*>(kFakeDevice) + 2;
  ExpectInvalid(MaskedCopy(T(kFakeDevice, DType::kInt64, {4}), kFakeMask, T(odd, DType::kInt64, {4}), kStream),
                "MaskedCopy: src data is not aligned to its 8-byte int64 elements");
}

TEST_F(ShimsArgsTest, MaskedCopyOfEmptyTensorsLaunchesNothing) {
  EXPECT_TRUE(MaskedCopy(T(nullptr, DType::kFloat32, {0, 3}), nullptr, T(nullptr, DType::kFloat32, {0, 3}), kStream).ok());
  // Nothing to copy, so any strides will do.
  EXPECT_TRUE(MaskedCopy(T(nullptr, DType::kFloat32, {2, 0}, {0, 1}), nullptr,
                         T(nullptr, DType::kFloat32, {2, 0}), kStream)
                  .ok());
}

TEST_F(ShimsArgsTest, PhiloxCreateDoesNoDeviceWork) {
  auto p = Philox::Create(1234);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->seed(), std::optional<uint64_t>(1234));
  EXPECT_FALSE(p->initialized());
  auto q = Philox::Create();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->seed(), std::nullopt);
  // Moving and destroying an unused generator touches nothing either.
  Philox moved = std::move(*q);
  EXPECT_FALSE(moved.initialized());
}

TEST_F(ShimsArgsTest, PhiloxDrawArguments) {
  auto p = Philox::Create(1);
  ASSERT_TRUE(p.ok());
  float* fake = static_cast<float*>(kFakeDevice);
  ExpectInvalid(p->Uniform(fake, -1, kStream), "Philox::Uniform: n is negative (-1)");
  ExpectInvalid(p->Normal(fake, -2, kStream), "Philox::Normal: n is negative (-2)");
  ExpectInvalid(p->Uniform(nullptr, 8, kStream), "Philox::Uniform: out is null with n = 8");
  ExpectInvalid(p->Normal(nullptr, 1, kStream), "Philox::Normal: out is null with n = 1");
  // Nothing to draw: OK, and the generator is still not set up.
  EXPECT_TRUE(p->Uniform(nullptr, 0, kStream).ok());
  EXPECT_TRUE(p->Normal(fake, 0, kStream).ok());
  EXPECT_FALSE(p->initialized());
  auto off = p->Offset(kStream);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, 0u);
}

TEST_F(ShimsArgsTest, PhiloxRandomDeviceFailureIsLoggedAndReturned) {
  LogCapture logs;
  PhiloxOptions options;
  options.logger = logs.logger();
  options.random_device_token = "no-such-entropy-source";
  auto p = Philox::Create(std::nullopt, options);
  ASSERT_TRUE(p.ok());
  float* fake = static_cast<float*>(kFakeDevice);
  for (int attempt = 0; attempt < 2; ++attempt) {  // each draw tries again
    Status s = p->Uniform(fake, 4, kStream);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
    EXPECT_NE(s.message().find("std::random_device"), std::string_view::npos) << s;
    EXPECT_FALSE(p->initialized());
    EXPECT_EQ(p->seed(), std::nullopt);
    ASSERT_EQ(logs.Count("philox_init_failed"), attempt + 1);
  }
  auto ev = logs.Find("philox_init_failed");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->level, spdlog::level::err);
  EXPECT_NE(ev->field("reason").find("std::random_device"), std::string::npos) << ev->line;
  EXPECT_EQ(ev->field("seeded"), "random_device");
}

// A Philox without its own logger, drawn inside a method's call, logs to
// that method's (the application's) logger through the LogScope.
TEST_F(ShimsArgsTest, PhiloxWithoutALoggerLogsToTheScopesLogger) {
  LogCapture app;
  EventLog method_log(app.logger(), LogFormat::kKeyValue);
  PhiloxOptions options;
  options.random_device_token = "no-such-entropy-source";
  auto p = Philox::Create(std::nullopt, options);
  ASSERT_TRUE(p.ok());
  {
    LogScope scope(&method_log, "sample");
    EXPECT_FALSE(p->Uniform(static_cast<float*>(kFakeDevice), 4, kStream).ok());
  }
  EXPECT_EQ(app.Count("philox_init_failed"), 1);
}

// Inside a ScopedThreadCapture the readbacks refuse on any stream before
// asking CUDA anything; other threads are unaffected.
TEST_F(ShimsArgsTest, ScopedThreadCaptureRefusesWithoutCuda) {
  const float* fake = static_cast<const float*>(kFakeDevice);
  EXPECT_FALSE(ScopedThreadCapture::Active());
  {
    ScopedThreadCapture outer;
    {
      ScopedThreadCapture inner;  // nests
      EXPECT_TRUE(ScopedThreadCapture::Active());
    }
    EXPECT_TRUE(ScopedThreadCapture::Active());
    bool other_thread_active = true;
    std::thread([&] { other_thread_active = ScopedThreadCapture::Active(); }).join();
    EXPECT_FALSE(other_thread_active);

    Status r = ReadScalar(fake, cudaStreamLegacy).status();
    EXPECT_TRUE(IsCaptureRefusal(r)) << r;
    EXPECT_EQ(r.message(), "ReadScalar reads a device value back to the host, which a CUDA graph cannot record");
    Status c = CountNonzero(kFakeMask, 10, kStream).status();
    EXPECT_TRUE(IsCaptureRefusal(c)) << c;
    EXPECT_NE(c.message().find("CountNonzero"), std::string_view::npos) << c;
    // Argument errors still come first.
    EXPECT_EQ(ReadScalar<float>(nullptr, kStream).status().code(), StatusCode::kInvalidArgument);

    LogCapture logs;
    PhiloxOptions options;
    options.logger = logs.logger();
    auto gen = Philox::Create(5, options);
    ASSERT_TRUE(gen.ok());
    Status first = gen->Uniform(static_cast<float*>(kFakeDevice), 4, kStream);
    EXPECT_TRUE(IsCaptureRefusal(first)) << first;
    EXPECT_FALSE(gen->initialized());
    EXPECT_EQ(logs.Count("philox_init_failed"), 0) << "a refusal is not a failure";
  }
  EXPECT_FALSE(ScopedThreadCapture::Active());
}

}  // namespace
}  // namespace encore::shims
