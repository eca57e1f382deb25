// SPDX-License-Identifier: Apache-2.0
// GPU tests of ReadScalar and CountNonzero: exact values for every dtype on
// created and default streams, refusal inside a capture that leaves the
// capture valid, counts over sizes that do not fill a block, and the errors
// for bad pointers and injected CUDA failures.
#include "encore/shims/read_scalar.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/core/internal/stream.h"
#include "encore/shims/masked_copy.h"
#include "encore/core/internal/scoped_thread_capture.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/process_util.h"

namespace encore::shims {
namespace {

using testing::DeviceBuffer;

class ReadScalarTest : public ::encore::testing::GpuStreamTest {};

// Stores `value`'s bytes on the device and reads them back through every
// kind of stream; the bytes must come back unchanged.
template <class T>
void ExpectRoundTrip(const T& value, cudaStream_t created) {
  DeviceBuffer buf(sizeof(T));
  ASSERT_TRUE(buf.ok());
  ENCORE_CUDA_ASSERT(testing::Upload(buf.get(), &value, sizeof(T)));
  const cudaStream_t streams[] = {created, cudaStreamLegacy, nullptr, cudaStreamPerThread};
  for (cudaStream_t st : streams) {
    StatusOr<T> got = ReadScalar(buf.template as<const T>(), st);
    ASSERT_TRUE(got.ok()) << got.status() << " on stream " << st;
    EXPECT_EQ(std::memcmp(&*got, &value, sizeof(T)), 0) << "on stream " << st;
  }
}

__half HalfFromBits(uint16_t bits) {
  __half_raw r;
  r.x = bits;
  return __half(r);
}

__nv_bfloat16 Bf16FromBits(uint16_t bits) {
  __nv_bfloat16_raw r;
  r.x = bits;
  return __nv_bfloat16(r);
}

TEST_F(ReadScalarTest, EveryDTypeReadsBackExactly) {
  ExpectRoundTrip<float>(-2.5e-3f, s());
  ExpectRoundTrip<float>(123456.789f, s());
  ExpectRoundTrip<double>(3.141592653589793, s());
  ExpectRoundTrip<double>(-1e-300, s());
  ExpectRoundTrip<__half>(HalfFromBits(0x3e00), s());                 // 1.5
  ExpectRoundTrip<__half>(HalfFromBits(0xfbff), s());                 // -65504
  ExpectRoundTrip<__nv_bfloat16>(Bf16FromBits(0x3fc0), s());   // 1.5
  ExpectRoundTrip<__nv_bfloat16>(Bf16FromBits(0xc2f7), s());   // -123.5
  ExpectRoundTrip<int32_t>(-123456789, s());
  ExpectRoundTrip<int32_t>(INT32_MAX, s());
  ExpectRoundTrip<int64_t>(-0x123456789abcdefLL, s());
  ExpectRoundTrip<int64_t>(INT64_MIN, s());
  ExpectRoundTrip<bool>(true, s());
  ExpectRoundTrip<bool>(false, s());
}

TEST_F(ReadScalarTest, BoolReadsAnyNonzeroByteAsTrue) {
  DeviceBuffer buf(1);
  ASSERT_TRUE(buf.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(buf.get(), 7, 1));
  auto got = ReadScalar(buf.as<const bool>(), s());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got);
}

TEST_F(ReadScalarTest, ReadsAfterWorkQueuedOnTheStream) {
  DeviceBuffer buf(sizeof(int32_t));
  ASSERT_TRUE(buf.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(buf.get(), 0, sizeof(int32_t)));
  for (int i = 1; i <= 20; ++i) {
    // No host sync between the queued write and the read.
    ENCORE_CUDA_ASSERT(cudaMemsetAsync(buf.get(), i, sizeof(int32_t), s()));
    auto got = ReadScalar(buf.as<const int32_t>(), s());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, i * 0x01010101);
  }
}

TEST_F(ReadScalarTest, ManagedMemoryIsAccepted) {
  int64_t* p = nullptr;
  ENCORE_CUDA_ASSERT(cudaMallocManaged(&p, sizeof(int64_t)));
  *p = 987654321012LL;
  auto got = ReadScalar<int64_t>(p, s());
  EXPECT_TRUE(got.ok()) << got.status();
  if (got.ok()) {
    EXPECT_EQ(*got, 987654321012LL);
  }
  ENCORE_CUDA_ASSERT(cudaFree(p));
}

TEST_F(ReadScalarTest, HostPointersAreInvalidArguments) {
  float pageable = 1.0f;
  auto r = ReadScalar<float>(&pageable, s());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(r.status().message(), "ReadScalar: device_ptr is not device memory (it is unregistered host memory)");

  double* pinned = nullptr;
  ENCORE_CUDA_ASSERT(cudaMallocHost(&pinned, sizeof(double)));
  auto d = ReadScalar<double>(pinned, s());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status();
  EXPECT_EQ(d.status().message(), "ReadScalar: device_ptr is not device memory (it is pinned host memory)");
  ENCORE_CUDA_ASSERT(cudaFreeHost(pinned));

  std::vector<uint8_t> host_mask(16, 1);
  auto c = CountNonzero(reinterpret_cast<const bool*>(host_mask.data()), 16, s());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status();
  EXPECT_EQ(c.status().message(), "CountNonzero: mask is not device memory (it is unregistered host memory)");

  auto n = ReadScalar<int32_t>(nullptr, s());
  EXPECT_EQ(n.status().message(), "ReadScalar: device_ptr is null");
  auto neg = CountNonzero(nullptr, -1, s());
  EXPECT_EQ(neg.status().message(), "CountNonzero: n is negative (-1)");
  // No sticky or pending error left behind.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// The capture sees a kernel, the refusals, then another kernel: the shims
// must refuse without recording anything or breaking the capture.
void CaptureWithRefusals(cudaStream_t s, cudaStreamCaptureMode mode) {
  DeviceBuffer value(sizeof(float)), out(sizeof(float)), mask(64);
  ASSERT_TRUE(value.ok() && out.ok() && mask.ok());
  const float v = 4.5f;
  ENCORE_CUDA_ASSERT(testing::Upload(value.get(), &v, sizeof v));
  ENCORE_CUDA_ASSERT(testing::Fill(out.get(), 0, sizeof(float)));
  ENCORE_CUDA_ASSERT(testing::Fill(mask.get(), 1, 64));
  TensorRef out_t{out.get(), DType::kFloat32, {1}, {}};
  TensorRef src_t{value.get(), DType::kFloat32, {1}, {}};

  // Nothing may return between begin and end: an open capture would break
  // every later test.
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s, mode));
  Status copy = MaskedCopy(out_t, mask.as<const bool>(), src_t, s);
  auto r = ReadScalar(value.as<const float>(), s);
  auto c = CountNonzero(mask.as<const bool>(), 64, s);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t is_err = cudaStreamIsCapturing(s, &cs);
  cudaGraph_t graph = nullptr;
  cudaError_t end_err = cudaStreamEndCapture(s, &graph);

  EXPECT_TRUE(copy.ok()) << copy;
  EXPECT_TRUE(IsCaptureRefusal(r.status())) << r.status();
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("ReadScalar"), std::string_view::npos) << r.status();
  EXPECT_NE(r.status().message().find("CUDA graph"), std::string_view::npos) << r.status();
  EXPECT_TRUE(IsCaptureRefusal(c.status())) << c.status();
  EXPECT_NE(c.status().message().find("CountNonzero"), std::string_view::npos) << c.status();
  EXPECT_EQ(is_err, cudaSuccess);
  EXPECT_EQ(cs, cudaStreamCaptureStatusActive) << "the refusals broke the capture";
  ASSERT_EQ(end_err, cudaSuccess) << cudaGetErrorName(end_err);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  size_t nodes = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 1u) << "only the MaskedCopy kernel is recorded";

  // The graph is usable, and after the capture the reads work again.
  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s));
  auto after = ReadScalar(out.as<const float>(), s);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, 4.5f);
  auto count = CountNonzero(mask.as<const bool>(), 64, s);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 64);
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
}

TEST_F(ReadScalarTest, RefusesInsideThreadLocalCaptureAndCaptureStaysValid) {
  CaptureWithRefusals(s(), cudaStreamCaptureModeThreadLocal);
}

TEST_F(ReadScalarTest, RefusesInsideGlobalCaptureAndCaptureStaysValid) {
  CaptureWithRefusals(s(), cudaStreamCaptureModeGlobal);
}

TEST_F(ReadScalarTest, RefusesOnLegacyStreamWhileABlockingStreamIsCaptured) {
  // A blocking stream: the legacy stream would synchronize with it.
  cudaStream_t blocking = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamCreateWithFlags(&blocking, cudaStreamDefault));
  DeviceBuffer value(sizeof(int32_t)), out(sizeof(int32_t)), mask(1);
  ASSERT_TRUE(value.ok() && out.ok() && mask.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(value.get(), 0, sizeof(int32_t)));
  ENCORE_CUDA_ASSERT(testing::Fill(mask.get(), 1, 1));
  TensorRef out_t{out.get(), DType::kInt32, {1}, {}};
  TensorRef src_t{value.get(), DType::kInt32, {1}, {}};

  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeThreadLocal));
  Status copy = MaskedCopy(out_t, mask.as<const bool>(), src_t, blocking);
  auto r = ReadScalar(value.as<const int32_t>(), cudaStreamLegacy);
  auto c = CountNonzero(mask.as<const bool>(), 1, nullptr);
  cudaGraph_t graph = nullptr;
  cudaError_t end_err = cudaStreamEndCapture(blocking, &graph);
  EXPECT_TRUE(copy.ok()) << copy;
  EXPECT_TRUE(IsCaptureRefusal(c.status())) << c.status();
  EXPECT_TRUE(IsCaptureRefusal(r.status())) << r.status();
  EXPECT_EQ(end_err, cudaSuccess) << cudaGetErrorName(end_err);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  if (graph != nullptr) ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
  ENCORE_CUDA_ASSERT(cudaStreamDestroy(blocking));
}

// While this thread captures one stream, CUDA rejects a sync of any other
// stream from it and invalidates the capture; CUDA cannot tell the shims the
// thread is capturing, so whoever captures holds a ScopedThreadCapture, and
// the shims refuse on every stream.
TEST_F(ReadScalarTest, RefusesOnAnyStreamWhileThisThreadCaptures) {
  auto other = Stream::Create();
  ASSERT_TRUE(other.ok()) << other.status();
  DeviceBuffer value(sizeof(double)), mask(10);
  ASSERT_TRUE(value.ok() && mask.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(value.get(), 0, sizeof(double)));
  ENCORE_CUDA_ASSERT(testing::Fill(mask.get(), 1, 10));
  TensorRef t{mask.get(), DType::kBool, {10}, {}};

  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  Status copy;
  StatusOr<double> r = InternalError("not run");
  StatusOr<int64_t> c = InternalError("not run");
  {
    ScopedThreadCapture capturing;
    copy = MaskedCopy(t, mask.as<const bool>(), t, s());
    r = ReadScalar(value.as<const double>(), other->get());
    c = CountNonzero(mask.as<const bool>(), 10, cudaStreamLegacy);
  }
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(s(), &graph);
  EXPECT_TRUE(copy.ok()) << copy;
  EXPECT_TRUE(IsCaptureRefusal(r.status())) << r.status();
  EXPECT_TRUE(IsCaptureRefusal(c.status())) << c.status();
  EXPECT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  if (graph != nullptr) ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
  EXPECT_FALSE(ScopedThreadCapture::Active());
  // Once the scope is gone the same reads work.
  auto again = ReadScalar(value.as<const double>(), other->get());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0.0);
}

int64_t CpuCount(const std::vector<uint8_t>& m, int64_t n) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) c += m[i] != 0;
  return c;
}

TEST_F(ReadScalarTest, CountNonzeroNoneSomeAllForAwkwardSizes) {
  const int64_t sizes[] = {1, 2, 31, 255, 256, 257, 1000, 4097, (1 << 20) + 3};
  std::mt19937 rng(12345);
  for (int64_t n : sizes) {
    DeviceBuffer mask(n);
    ASSERT_TRUE(mask.ok());
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::vector<uint8_t> host(n);
      for (int64_t i = 0; i < n; ++i) {
        switch (pattern) {
          case 0: host[i] = 0; break;                                    // none
          case 1: host[i] = 1; break;                                    // all
          case 2: host[i] = (i % 3 == 0 || i % 7 == 1) ? 1 : 0; break;   // some
          default: host[i] = static_cast<uint8_t>(rng() % 4); break;     // any nonzero byte counts
        }
      }
      ENCORE_CUDA_ASSERT(testing::Upload(mask.get(), host.data(), n));
      const int64_t want = CpuCount(host, n);
      if (pattern == 0) {
        ASSERT_EQ(want, 0);
      }
      if (pattern == 1) {
        ASSERT_EQ(want, n);
      }
      auto got = CountNonzero(mask.as<const bool>(), n, s());
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, want) << "n=" << n << " pattern=" << pattern;
      auto legacy = CountNonzero(mask.as<const bool>(), n, cudaStreamLegacy);
      ASSERT_TRUE(legacy.ok()) << legacy.status();
      EXPECT_EQ(*legacy, want) << "legacy stream, n=" << n << " pattern=" << pattern;
      // A prefix, from an odd address.
      if (n > 2) {
        auto prefix = CountNonzero(mask.as<const bool>() + 1, n - 2, s());
        ASSERT_TRUE(prefix.ok()) << prefix.status();
        EXPECT_EQ(*prefix, want - (host[0] != 0) - (host[n - 1] != 0)) << "n=" << n;
      }
    }
  }
}

TEST_F(ReadScalarTest, CountNonzeroOfZeroElements) {
  DeviceBuffer mask(8);
  ASSERT_TRUE(mask.ok());
  auto got = CountNonzero(mask.as<const bool>(), 0, s());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 0);
}

TEST_F(ReadScalarTest, InjectedCopyFailureIsAStatusAndLeaksNothing) {
  DeviceBuffer value(sizeof(float)), mask(100);
  ASSERT_TRUE(value.ok() && mask.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(value.get(), 0, sizeof(float)));
  ENCORE_CUDA_ASSERT(testing::Fill(mask.get(), 1, 100));
  // Warm this thread's staging buffer so the counts below are only the calls.
  ASSERT_TRUE(ReadScalar(value.as<const float>(), s()).ok());

  CudaFaultInjector inj;
  inj.FailNth(CudaCall::kMemcpyAsync, 1, cudaErrorLaunchOutOfResources);
  auto r = ReadScalar(value.as<const float>(), s());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cudaMemcpyAsync"), std::string_view::npos) << r.status();
  EXPECT_FALSE(IsCaptureRefusal(r.status()));
  auto again = ReadScalar(value.as<const float>(), s());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0.0f);

  inj.FailNth(CudaCall::kMemcpyAsync, 1, cudaErrorLaunchOutOfResources);
  auto c = CountNonzero(mask.as<const bool>(), 100, s());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cudaMemcpyAsync"), std::string_view::npos) << c.status();
  auto c2 = CountNonzero(mask.as<const bool>(), 100, s());
  ASSERT_TRUE(c2.ok()) << c2.status();
  EXPECT_EQ(*c2, 100);
  EXPECT_EQ(inj.Count(CudaCall::kMallocAsync), 2);
  EXPECT_EQ(inj.Count(CudaCall::kFreeAsync), 2) << "the scratch count leaked on the failure path";

  inj.FailNth(CudaCall::kMallocAsync, 1, cudaErrorMemoryAllocation);
  auto c3 = CountNonzero(mask.as<const bool>(), 100, s());
  EXPECT_EQ(c3.status().code(), StatusCode::kResourceExhausted) << c3.status();
  EXPECT_EQ(inj.Count(CudaCall::kFreeAsync), 2) << "freed what was never allocated";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace encore::shims
