// SPDX-License-Identifier: Apache-2.0
// The listed constants under the capture's probe and verification, which
// run a call twice: what the call writes is saved and put back (its blocks,
// found by device-side checksums), everything else proven unchanged, so a
// write is applied exactly once, a write the warmups did not show stages the
// graph instead, and a read-only constant that changes is named. Weights
// are never copied: a capture over gigabytes of them takes milliseconds.
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

class ConstantsTest : public testing::GpuManagerTest {
 public:

  // y[0] = 2 * (x[0] + p) with cache[p * stride] = x[0] + p and p = (*pos)++.
  Method* Append(const std::string& name, float* cache, size_t cache_bytes, int64_t stride, int* pos,
                 MethodFlags flags, bool cache_read_only = false) {
    MethodSpec spec;
    spec.name = name;
    spec.constants = std::vector<Constant>{{"kv_cache", cache, cache_bytes, cache_read_only}, {"pos", pos, sizeof(int)}};
    spec.flags = flags;
    spec.fn = [cache, stride, pos](Call& c) -> Status {
      cudaError_t e = testing::LaunchAppend(cache, stride, pos, static_cast<const float*>(c.input(0).data),
                                            static_cast<float*>(c.output(0).data), c.stream());
      return e == cudaSuccess ? OkStatus() : CudaStatus(e, "append");
    };
    auto m = mgr_->Register(std::move(spec));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }

  float RunOnce(Method* m, float x) {
    x_.Upload(std::vector<float>{x});
    TensorRef in{x_.get(), DType::kFloat32, {1}, {}}, out{y_.get(), DType::kFloat32, {1}, {}};
    Status st = m->Run({&in, 1}, {&out, 1}, s());
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    return y_.Download()[0];
  }

  DeviceBuffer<float> x_{1}, y_{1};
};

// Runs `calls` appends; each result, the cache and the position must be
// those of each call applied exactly once.
void ExpectAppendedOnce(ConstantsTest* t, Method* m, DeviceBuffer<float>& cache, int64_t stride,
                        DeviceBuffer<int>& pos, int calls) {
  for (int call = 1; call <= calls; ++call) {
    const float x = 10.0f * call;
    EXPECT_EQ(t->RunOnce(m, x), 2.0f * (x + (call - 1))) << "call " << call;
  }
  EXPECT_EQ(pos.Download()[0], calls);
  std::vector<float> c = cache.Download();
  for (int p = 0; p < calls; ++p) EXPECT_EQ(c[p * stride], 10.0f * (p + 1) + p) << "position " << p;
}

TEST_F(ConstantsTest, ADecodeStepOverAGigabyteCacheAppendsExactlyOnceUnderTheProbeAndVerification) {
  const size_t floats = (size_t{1} << 30) / sizeof(float);
  DeviceBuffer<float> cache(floats);
  DeviceBuffer<int> pos(1);
  ASSERT_EQ(cudaMemset(cache.get(), 0, floats * sizeof(float)), cudaSuccess);
  pos.Upload(std::vector<int>{0});
  MethodFlags f;
  f.verify = 3;
  f.verify_every = 4;
  Method* m = Append("decode", cache.get(), floats * sizeof(float), 1, pos.get(), f);
  ExpectAppendedOnce(this, m, cache, 1, pos, 30);
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kReplay) << r.graphs_off_reason;
  EXPECT_EQ(r.verify_failures, 0);
  EXPECT_GE(r.verified_launches, 4);
  // The appends stay in one 1 MiB block, which the warmups show written:
  // the probe saves and restores it, and the graph binds directly.
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
}

TEST_F(ConstantsTest, AWriteTheWarmupsDidNotShowStagesTheGraphAndIsAppliedOnce) {
  const int64_t stride = (1 << 20) / sizeof(float);  // every call a new block
  const int calls = 12;
  DeviceBuffer<float> cache(static_cast<size_t>(stride) * (calls + 1));
  DeviceBuffer<int> pos(1);
  ASSERT_EQ(cudaMemset(cache.get(), 0, cache.size() * sizeof(float)), cudaSuccess);
  pos.Upload(std::vector<int>{0});
  Method* m = Append("strided", cache.get(), cache.size() * sizeof(float), stride, pos.get(), MethodFlags{});
  ExpectAppendedOnce(this, m, cache, stride, pos, calls);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("constant 'kv_cache' changed outside the blocks"), std::string::npos)
      << r.binding_reason;
}

TEST_F(ConstantsTest, ARewrittenReadOnlyConstantStagesTheGraphNamingIt) {
  DeviceBuffer<float> cache(1024);
  DeviceBuffer<int> pos(1);
  pos.Upload(std::vector<int>{0});
  Method* m = Append("liar", cache.get(), cache.size() * sizeof(float), 1, pos.get(), MethodFlags{},
                     /*cache_read_only=*/true);
  ExpectAppendedOnce(this, m, cache, 1, pos, 8);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("constant 'kv_cache' is flagged read_only"), std::string::npos)
      << r.binding_reason;
}

TEST_F(ConstantsTest, ARewrittenReadOnlyConstantFailsVerificationNamingIt) {
  DeviceBuffer<float> cache(1024);
  DeviceBuffer<int> pos(1);
  pos.Upload(std::vector<int>{0});
  MethodFlags f;
  f.verify = 2;
  f.binding = Binding::kStaged;
  Method* m = Append("liar_verified", cache.get(), cache.size() * sizeof(float), 1, pos.get(), f,
                     /*cache_read_only=*/true);
  ExpectAppendedOnce(this, m, cache, 1, pos, 8);
  MethodReport r = m->Report();
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_EQ(r.graphs_off_reason.rfind("verify: constant 'kv_cache' is flagged read_only", 0), 0u)
      << r.graphs_off_reason;
}

TEST_F(ConstantsTest, GigabytesOfListedWeightsAreNotCopiedAtCapture) {
  const size_t floats = (size_t{2} << 30) / sizeof(float);
  DeviceBuffer<float> weights(floats);
  MethodSpec spec;
  spec.name = "weighted";
  spec.constants = std::vector<Constant>{{"weights", weights.get(), floats * sizeof(float)}};
  spec.fn = [w = weights.get()](Call& c) -> Status {
    // out = in + weights[0..n)
    cudaError_t e = testing::LaunchAddBroadcast(static_cast<const float*>(c.input(0).data), w, 256,
                                                static_cast<float*>(c.output(0).data), c.input(0).numel(), c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "add");
  };
  Method* m = *mgr_->Register(std::move(spec));
  weights.Upload(std::vector<float>(1024, 1.5f));
  DeviceBuffer<float> in(256), out(256);
  in.Upload(std::vector<float>(256, 2.0f));
  TensorRef ti{in.get(), DType::kFloat32, {256}, {}}, to{out.get(), DType::kFloat32, {256}, {}};
  for (int call = 0; call < 6; ++call) ASSERT_TRUE(m->Run({&ti, 1}, {&to, 1}, s()).ok());
  ASSERT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
  EXPECT_EQ(out.Download()[17], 3.5f);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  // A copy of 2 GiB to the host twice took seconds; checksums take ms.
  EXPECT_LT(r.last_capture_us, 300000) << "capture of a method over 2 GiB of weights";
}

}  // namespace
}  // namespace encore
