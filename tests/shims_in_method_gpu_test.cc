// SPDX-License-Identifier: Apache-2.0
// The shims inside managed methods: readbacks refuse the capture and the call
// falls back to eager; MaskedCopy and Philox replay correctly in graphs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/graph/manager.h"
#include "encore/shims/masked_copy.h"
#include "encore/shims/philox.h"
#include "encore/shims/read_scalar.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

MethodFlags Warmup(int n) {
  MethodFlags f;
  f.warmup_calls = n;
  return f;
}

TEST(ShimsInMethodTest, CountNonzeroRefusesCaptureAndFallsBack) {
  ENCORE_REQUIRE_GPU();
  auto mgr = *Manager::Create();
  MethodSpec spec;
  spec.name = "count";
  spec.constants = std::vector<Constant>{};
  spec.flags = Warmup(1);
  // out[i] = in[i] + (number of true mask elements)
  spec.fn = [](Call& c) -> Status {
    ENCORE_ASSIGN_OR_RETURN(int64_t k, shims::CountNonzero(static_cast<const bool*>(c.input(1).data),
                                                           c.input(1).numel(), c.stream()));
    return testing::AffineCall(c, 1.0f, static_cast<float>(k));
  };
  Method* m = *mgr->Register(spec);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  DeviceBuffer<float> in(64), out(64);
  DeviceBuffer<bool> mask(64);
  in.Fill(1.0f);
  for (int call = 0; call < 4; ++call) {
    std::vector<bool> mv(64);
    std::vector<uint8_t> bytes(64);
    for (int i = 0; i < 64; ++i) bytes[i] = (i % (call + 2)) == 0;
    int expected = 0;
    for (uint8_t b : bytes) expected += b;
    ASSERT_EQ(cudaMemcpy(mask.get(), bytes.data(), 64, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    TensorRef ins[] = {{in.get(), DType::kFloat32, {64}, {}}, {mask.get(), DType::kBool, {64}, {}}};
    TensorRef o{out.get(), DType::kFloat32, {64}, {}};
    ASSERT_TRUE(m->Run(ins, {&o, 1}, s).ok()) << call;
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(out.Download()[0], 1.0f + expected) << call;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.captures, 0);
  EXPECT_NE(r.graphs_off_reason.find("CountNonzero"), std::string::npos) << r.graphs_off_reason;
  cudaStreamDestroy(s);
}

TEST(ShimsInMethodTest, MaskedCopyReplaysWithNewMasksEqualToCpuReference) {
  ENCORE_REQUIRE_GPU();
  auto mgr = *Manager::Create();
  MethodSpec spec;
  spec.name = "select";
  spec.constants = std::vector<Constant>{};
  spec.flags = Warmup(1);
  // out = base; out[mask] = src[mask]
  spec.fn = [](Call& c) -> Status {
    ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 1.0f, 0.0f));
    return shims::MaskedCopy(c.output(0), static_cast<const bool*>(c.input(1).data), c.input(2), c.stream());
  };
  Method* m = *mgr->Register(spec);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  constexpr int n = 1000;
  DeviceBuffer<float> base(n), src(n), out(n);
  DeviceBuffer<bool> mask(n);
  for (int call = 0; call < 12; ++call) {
    std::vector<float> b(n), sv(n);
    std::vector<uint8_t> mv(n);
    for (int i = 0; i < n; ++i) {
      b[i] = -1.0f - i;
      sv[i] = call * 1000.0f + i;
      mv[i] = call % 3 == 0 ? 0 : (call % 3 == 1 ? 1 : ((i * 7 + call) % 5 == 0));
    }
    base.Upload(b);
    src.Upload(sv);
    ASSERT_EQ(cudaMemcpy(mask.get(), mv.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    TensorRef ins[] = {{base.get(), DType::kFloat32, {n}, {}},
                       {mask.get(), DType::kBool, {n}, {}},
                       {src.get(), DType::kFloat32, {n}, {}}};
    TensorRef o{out.get(), DType::kFloat32, {n}, {}};
    out.Fill(12345.0f);
    ASSERT_TRUE(m->Run(ins, {&o, 1}, s).ok()) << call;
    std::vector<float> got = out.Download();
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], mv[i] ? sv[i] : b[i]) << "call " << call << " i " << i;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 10);
  cudaStreamDestroy(s);
}

TEST(ShimsInMethodTest, PhiloxDrawsFreshNumbersEveryReplayAndMatchesEager) {
  ENCORE_REQUIRE_GPU();
  auto mgr = *Manager::Create();
  auto graphed_gen = shims::Philox::Create(1234);
  auto eager_gen = shims::Philox::Create(1234);
  ASSERT_TRUE(graphed_gen.ok() && eager_gen.ok());
  constexpr int n = 1000;  // 250 counters a draw
  auto make = [&](const char* name, shims::Philox* gen, bool graphs) {
    MethodSpec spec;
    spec.name = name;
    spec.constants = std::vector<Constant>{};
    MethodFlags f = Warmup(2);
    f.graphs = graphs;
    spec.flags = f;
    spec.fn = [gen](Call& c) -> Status {
      return gen->Uniform(static_cast<float*>(c.output(0).data), c.output(0).numel(), c.stream());
    };
    return *mgr->Register(spec);
  };
  Method* graphed = make("rand_graph", &*graphed_gen, true);
  Method* eager = make("rand_eager", &*eager_gen, false);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  DeviceBuffer<float> a(n), b(n);
  TensorRef ta{a.get(), DType::kFloat32, {n}, {}}, tb{b.get(), DType::kFloat32, {n}, {}};
  std::set<float> firsts;
  constexpr int kCalls = 103;  // 2 warmups, 1 capture, 100 replays
  for (int call = 0; call < kCalls; ++call) {
    ASSERT_TRUE(graphed->Run({}, {&ta, 1}, s).ok()) << call;
    ASSERT_TRUE(eager->Run({}, {&tb, 1}, s).ok()) << call;
    std::vector<float> ga = a.Download(), gb = b.Download();
    ASSERT_EQ(ga, gb) << "graph and eager draws differ at call " << call;
    firsts.insert(ga[0]);
    for (float v : ga) ASSERT_TRUE(v >= 0.0f && v < 1.0f);
  }
  EXPECT_EQ(firsts.size(), static_cast<size_t>(kCalls));  // every call drew new numbers
  EXPECT_EQ(graphed->Report().replays, 100);
  auto off = graphed_gen->Offset(s);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(*off, static_cast<uint64_t>(kCalls) * (n / 4));
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace encore
