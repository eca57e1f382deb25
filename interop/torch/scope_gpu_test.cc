// SPDX-License-Identifier: Apache-2.0
// libtorch code as an encore method body under Scope, on a GPU: results
// bit-equal to the same code run without encore, the allocator routed to the
// graph's pool (tensors allocated between replays survive; without routing
// they are overwritten), Release returning the pool, the shape guard, and
// the calls PyTorch cannot capture falling back to eager ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "encore/interop/torch/internal/torch_test_util.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/process_util.h"

namespace encore::torch {
namespace {

using ::testing::HasSubstr;
using testing::Fixture;
using testing::kBatch;
using testing::kHidden;
using testing::kIn;
using testing::kOut;

constexpr int kBuffers = 4;

struct Buffers {
  std::vector<at::Tensor> in, out, data;
  Buffers(int64_t rows, int64_t in_cols, int64_t out_cols) {
    for (int i = 0; i < kBuffers; ++i) {
      in.push_back(at::empty({rows, in_cols}, testing::CudaFloat()));
      out.push_back(at::empty({rows, out_cols}, testing::CudaFloat()));
    }
    for (int i = 0; i < 7; ++i) data.push_back(testing::Random({rows, in_cols}, 100 + i));
  }
  // Call `call`'s input: buffer call % 4, refilled with new values.
  const at::Tensor& Input(int call) { return in[call % kBuffers].copy_(data[call % data.size()]); }
  const at::Tensor& Output(int call) { return out[call % kBuffers]; }
};

// Runs `calls` calls over the rotating buffers, each output compared bit for
// bit with the MLP run without encore on the same stream. Returns the calls
// that differed.
int RunChecked(Method* m, const testing::Mlp& mlp, Buffers& b, int first, int calls, cudaStream_t s) {
  int differ = 0;
  for (int c = first; c < first + calls; ++c) {
    const at::Tensor& x = b.Input(c);
    Status st = testing::Run(m, x, b.Output(c), s);
    EXPECT_TRUE(st.ok()) << "call " << c << ": " << st;
    at::Tensor want = mlp.Forward(x);
    if (!at::equal(b.Output(c), want)) ++differ;
  }
  return differ;
}

class ScopeGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { ENCORE_REQUIRE_GPU(); }
};

TEST_F(ScopeGpuTest, MlpOverRotatingBuffersIsBitEqualToPlainLibtorch) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  testing::Mlp mlp;
  auto m = fx.manager->Register(testing::MlpMethod("mlp", &mlp));
  ASSERT_TRUE(m.ok()) << m.status();
  Buffers b(kBatch, kIn, kOut);
  EXPECT_EQ(RunChecked(*m, mlp, b, 0, 200, fx.s()), 0);
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.captures, 1) << r.graphs_off_reason;
  EXPECT_EQ(r.replays, 196);
  EXPECT_EQ(r.capture_failures, 0);
  EXPECT_GT(r.graph_nodes, 3u);
}

TEST_F(ScopeGpuTest, StagedBindingIsBitEqualToo) {
  MethodFlags f;
  f.binding = Binding::kStaged;
  Fixture fx(f);
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  testing::Mlp mlp;
  auto m = fx.manager->Register(testing::MlpMethod("mlp_staged", &mlp));
  ASSERT_TRUE(m.ok()) << m.status();
  Buffers b(kBatch, kIn, kOut);
  EXPECT_EQ(RunChecked(*m, mlp, b, 0, 40, fx.s()), 0);
  EXPECT_EQ((*m)->Report().captures, 1);
}

// Routing off with ENCORE_TORCH_ROUTE_ALLOCATOR=0 makes this test fail: the
// capture's intermediates go back to PyTorch's pool when the body returns,
// the filled tensors take their blocks, and every replay writes them.
TEST_F(ScopeGpuTest, TensorsAllocatedBetweenReplaysSurvive) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  testing::Mlp mlp;
  auto m = fx.manager->Register(testing::MlpMethod("mlp_fills", &mlp));
  ASSERT_TRUE(m.ok()) << m.status();
  Buffers b(kBatch, kIn, kOut);
  ASSERT_EQ(RunChecked(*m, mlp, b, 0, 4, fx.s()), 0);  // 3 warmups and the capture
  ASSERT_EQ((*m)->Report().captures, 1);
  testing::Fills fills({kBatch * kHidden, kBatch * kOut}, 8, 7.0f);
  int differ = 0;
  for (int round = 0; round < 5; ++round) {
    testing::Fills more({kBatch * kHidden, kBatch * kOut}, 2, 7.0f);  // allocated and filled between replays
    differ += RunChecked(*m, mlp, b, 4 + round * 10, 10, fx.s());
    EXPECT_EQ(more.Overwritten(), 0) << "round " << round;
  }
  EXPECT_EQ(fills.Overwritten(), 0) << "of " << fills.elements() << " filled elements";
  EXPECT_EQ(differ, 0);
}

// The hazard the routing removes, shown: the same method with routing off.
TEST_F(ScopeGpuTest, WithoutRoutingReplaysOverwriteOtherTensors) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  testing::Mlp mlp;
  ScopeOptions off;
  off.route_allocator = false;
  auto m = fx.manager->Register(testing::MlpMethod("mlp_unrouted", &mlp, off));
  ASSERT_TRUE(m.ok()) << m.status();
  Buffers b(kBatch, kIn, kOut);
  ASSERT_EQ(RunChecked(*m, mlp, b, 0, 4, fx.s()), 0);
  testing::Fills fills({kBatch * kHidden, kBatch * kOut}, 8, 7.0f);
  for (int c = 4; c < 14; ++c) ASSERT_TRUE(testing::Run(*m, b.Input(c), b.Output(c), fx.s()).ok());
  const int64_t overwritten = fills.Overwritten();
  std::printf("without routing: %lld of %lld filled elements overwritten by 10 replays\n",
              static_cast<long long>(overwritten), static_cast<long long>(fills.elements()));
  if (overwritten == 0) GTEST_SKIP() << "PyTorch's allocator did not hand the graph's blocks out this time";
}

TEST_F(ScopeGpuTest, ReleaseReturnsThePool) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  testing::Mlp mlp;
  auto m = fx.manager->Register(testing::MlpMethod("mlp_release", &mlp));
  ASSERT_TRUE(m.ok()) << m.status();
  Buffers b(kBatch, kIn, kOut);
  ASSERT_EQ(RunChecked(*m, mlp, b, 0, 3, fx.s()), 0);  // warmups
  const int64_t before = testing::ReservedAfterEmptyCache();
  ASSERT_EQ(RunChecked(*m, mlp, b, 3, 10, fx.s()), 0);  // capture and replays
  const int64_t with_graph = testing::ReservedAfterEmptyCache();
  EXPECT_GE(with_graph - before, kBatch * kHidden * 4) << "the graph's pool holds its intermediates";
  ASSERT_TRUE((*m)->Release().ok());
  const int64_t after = testing::ReservedAfterEmptyCache();
  EXPECT_LE(after, before) << "before " << before << ", with the graph " << with_graph;
  // It warms up and captures again, with a new pool.
  EXPECT_EQ(RunChecked(*m, mlp, b, 13, 6, fx.s()), 0);
  EXPECT_EQ((*m)->Report().captures, 2);
}

MethodSpec Affine(std::string name) {
  MethodSpec spec;
  spec.name = std::move(name);
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& call) -> Status {
    ENCORE_ASSIGN_OR_RETURN(Scope scope, Scope::Enter(call));
    return scope.Run([&] {
      ToTensor(call.output(0), scope.device()).copy_(ToTensor(call.input(0), scope.device()) * 2 + 1);
    });
  };
  return spec;
}

TEST_F(ScopeGpuTest, AShapeChangeIsRefusedWithSpecsMessage) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  auto m = fx.manager->Register(Affine("torch_affine"));
  ASSERT_TRUE(m.ok()) << m.status();
  at::Tensor x = testing::Random({2, 3}, 5), y = at::empty({2, 3}, testing::CudaFloat());
  for (int c = 0; c < 5; ++c) ASSERT_TRUE(testing::Run(*m, x, y, fx.s()).ok());
  EXPECT_TRUE(at::equal(y, x * 2 + 1));
  at::Tensor x4 = testing::Random({2, 4}, 6), y4 = at::zeros({2, 4}, testing::CudaFloat());
  Status s = testing::Run(*m, x4, y4, fx.s());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // The refusal's fixed text, then the remedy encore adds.
  EXPECT_EQ(s.message().rfind("method 'torch_affine': input 0 has size 4 in dim 1, captured with 3", 0), 0u) << s;
  EXPECT_EQ(at::count_nonzero(y4).item<int64_t>(), 0) << "nothing was launched";
}

TEST_F(ScopeGpuTest, AnItemReadFallsBackToEagerCallsWithRightResults) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  MethodSpec spec;
  spec.name = "torch_item";
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& call) -> Status {
    ENCORE_ASSIGN_OR_RETURN(Scope scope, Scope::Enter(call));
    return scope.Run([&] {
      at::Tensor x = ToTensor(call.input(0), scope.device());
      const float total = x.sum().item<float>();  // a device value read on the host
      ToTensor(call.output(0), scope.device()).copy_(x * total);
    });
  };
  auto m = fx.manager->Register(std::move(spec));
  ASSERT_TRUE(m.ok()) << m.status();
  at::Tensor y = at::empty({8, 8}, testing::CudaFloat());
  for (int c = 0; c < 8; ++c) {
    at::Tensor x = testing::Random({8, 8}, 20 + c);
    Status s = testing::Run(*m, x, y, fx.s());
    ASSERT_TRUE(s.ok()) << "call " << c << ": " << s;
    EXPECT_TRUE(at::equal(y, x * x.sum().item<float>())) << "call " << c;
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_THAT(r.graphs_off_reason, HasSubstr("inside a capture"));  // a capture refusal: logged at info
}

TEST_F(ScopeGpuTest, TorchRandomNumbersInACaptureFallBackToEagerCalls) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  MethodSpec spec;
  spec.name = "torch_rand";
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& call) -> Status {
    ENCORE_ASSIGN_OR_RETURN(Scope scope, Scope::Enter(call));
    return scope.Run([&] {
      at::Tensor x = ToTensor(call.input(0), scope.device());
      ToTensor(call.output(0), scope.device()).copy_(x + at::rand_like(x));
    });
  };
  auto m = fx.manager->Register(std::move(spec));
  ASSERT_TRUE(m.ok()) << m.status();
  at::Tensor x = at::zeros({1024}, testing::CudaFloat()), y = at::empty({1024}, testing::CudaFloat());
  at::Tensor previous;
  for (int c = 0; c < 8; ++c) {
    Status s = testing::Run(*m, x, y, fx.s());
    ASSERT_TRUE(s.ok()) << "call " << c << ": " << s;
    if (previous.defined()) EXPECT_FALSE(at::equal(y, previous)) << "call " << c << " repeated its numbers";
    previous = y.clone();
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.phase, MethodPhase::kEager) << r.graphs_off_reason;
}

TEST_F(ScopeGpuTest, CallsOnTheLegacyStreamWork) {
  Fixture fx;
  testing::Mlp mlp;
  auto m = fx.manager->Register(testing::MlpMethod("mlp_legacy", &mlp));
  ASSERT_TRUE(m.ok()) << m.status();
  Buffers b(kBatch, kIn, kOut);
  c10::cuda::CUDAStreamGuard guard(c10::cuda::getDefaultCUDAStream());
  EXPECT_EQ(RunChecked(*m, mlp, b, 0, 12, nullptr), 0);
  EXPECT_EQ((*m)->Report().captures, 1);
}

constexpr char kAsyncChild[] = "ScopeGpuChild.DISABLED_AsyncAllocatorIsRefused";

TEST(ScopeGpuChild, DISABLED_AsyncAllocatorIsRefused) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  auto m = fx.manager->Register(Affine("torch_async"));
  ASSERT_TRUE(m.ok()) << m.status();
  at::Tensor x = testing::Random({64}, 7), y = at::empty({64}, testing::CudaFloat());
  for (int c = 0; c < 6; ++c) {
    ASSERT_TRUE(testing::Run(*m, x, y, fx.s()).ok());
    ASSERT_TRUE(at::equal(y, x * 2 + 1));
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_THAT(r.graphs_off_reason, HasSubstr("cudaMallocAsync"));
}

TEST_F(ScopeGpuTest, TheCudaMallocAsyncBackendIsRefused) {
  // The backend is chosen once per process, from the environment.
  pid_t pid = encore::testing::SpawnSelfTest(kAsyncChild, {"PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync"});
  ASSERT_GT(pid, 0);
  encore::testing::ChildExit e = encore::testing::WaitChild(pid, std::chrono::seconds(120));
  EXPECT_TRUE(e.exited && e.exit_code == 0) << e.Describe();
}

}  // namespace
}  // namespace encore::torch
