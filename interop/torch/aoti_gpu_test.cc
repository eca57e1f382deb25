// SPDX-License-Identifier: Apache-2.0
// An AOTInductor package (bench/torch_aoti_export.py's decoder) as an encore
// method on a GPU: bit-equal to the package run without encore over rotating
// buffers, staged and auto binding, tensors allocated between replays
// surviving, Release returning the pool, a shape change refused. The package
// is $ENCORE_TORCH_AOTI_PACKAGE (tools/torch_suite.sh makes it); without it
// the tests skip.
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "encore/interop/torch/internal/torch_test_util.h"
#include "encore/tests/gpu_test_util.h"

namespace encore::torch {
namespace {

using testing::Fixture;

// The export script's defaults: x (kBatch, kSeq, kEmbd) bfloat16.
constexpr int64_t kBatch = 4, kSeq = 32, kEmbd = 768;
constexpr int kBuffers = 4;

std::string PackagePath() {
  const char* p = std::getenv("ENCORE_TORCH_AOTI_PACKAGE");
  return p != nullptr ? p : "";
}

at::TensorOptions Bf16() { return at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16); }

class AotiGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ENCORE_REQUIRE_GPU();
    if (PackagePath().empty()) GTEST_SKIP() << "ENCORE_TORCH_AOTI_PACKAGE is not set (tools/torch_suite.sh sets it)";
    // The package without encore, for the expected results: its own loader,
    // PyTorch's default runner.
    reference_ = std::make_unique<::torch::inductor::AOTIModelPackageLoader>(PackagePath());
    for (int i = 0; i < kBuffers; ++i) {
      in_.push_back(at::empty({kBatch, kSeq, kEmbd}, Bf16()));
      out_.push_back(at::empty({kBatch, kSeq, kEmbd}, Bf16()));
    }
    for (int i = 0; i < 7; ++i) data_.push_back(testing::Random({kBatch, kSeq, kEmbd}, 300 + i).to(at::kBFloat16));
  }

  StatusOr<Method*> Register(Fixture& fx, const std::string& name, std::optional<MethodFlags> flags = {}) {
    AotiOptions o;
    o.flags = flags;
    ENCORE_ASSIGN_OR_RETURN(MethodSpec spec, AotiMethod(name, PackagePath(), o));
    return fx.manager->Register(std::move(spec));
  }

  // Calls [first, first + n) over the rotating buffers; returns the calls
  // whose output differs from the reference run on the same stream.
  int RunChecked(Method* m, int first, int n, cudaStream_t s) {
    int differ = 0;
    for (int c = first; c < first + n; ++c) {
      at::Tensor& x = in_[c % kBuffers];
      x.copy_(data_[c % data_.size()]);
      Status st = testing::Run(m, x, out_[c % kBuffers], s);
      EXPECT_TRUE(st.ok()) << "call " << c << ": " << st;
      std::vector<at::Tensor> want = reference_->run({x}, s);
      if (want.size() != 1 || !at::equal(out_[c % kBuffers], want[0])) ++differ;
    }
    return differ;
  }

  std::unique_ptr<::torch::inductor::AOTIModelPackageLoader> reference_;
  std::vector<at::Tensor> in_, out_, data_;
};

TEST_F(AotiGpuTest, RotatingBuffersAreBitEqualToThePackageWithoutEncore) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  StatusOr<Method*> m = Register(fx, "decoder");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(RunChecked(*m, 0, 200, fx.s()), 0);
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.captures, 1) << r.graphs_off_reason;
  EXPECT_EQ(r.replays, 196);
  std::printf("decoder: binding %s (%s), %zu nodes\n", std::string(BindingName(r.binding)).c_str(),
              r.binding_reason.c_str(), r.graph_nodes);
}

TEST_F(AotiGpuTest, StagedBindingIsBitEqualToo) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  MethodFlags f;
  f.binding = Binding::kStaged;
  StatusOr<Method*> m = Register(fx, "decoder_staged", f);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(RunChecked(*m, 0, 60, fx.s()), 0);
  EXPECT_EQ((*m)->Report().captures, 1);
}

TEST_F(AotiGpuTest, TheWeightsAreListedReadOnly) {
  StatusOr<MethodSpec> spec = AotiMethod("decoder", PackagePath());
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec->constants.has_value());
  EXPECT_GE(spec->constants->size(), 2u * 12u) << "2 blocks of a GPT-2 layer";
  for (const Constant& c : *spec->constants) {
    EXPECT_TRUE(c.read_only) << c.name;
    EXPECT_NE(c.data, nullptr) << c.name;
    cudaPointerAttributes a{};
    ASSERT_EQ(cudaPointerGetAttributes(&a, c.data), cudaSuccess) << c.name;
    EXPECT_EQ(a.type, cudaMemoryTypeDevice) << c.name;
  }
}

// Fails with ENCORE_TORCH_ROUTE_ALLOCATOR=0: the package's intermediates are
// handed to the filled tensors and overwritten on replay.
TEST_F(AotiGpuTest, TensorsAllocatedBetweenReplaysSurvive) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  StatusOr<Method*> m = Register(fx, "decoder_fills");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(RunChecked(*m, 0, 4, fx.s()), 0);
  ASSERT_EQ((*m)->Report().captures, 1);
  // The decoder's activations: (B*T, C) and (B*T, 4C) in bfloat16 are the
  // float counts below halved.
  const int64_t rows = kBatch * kSeq;
  testing::Fills fills({rows * kEmbd / 2, rows * kEmbd * 2, rows * kEmbd * 3 / 2}, 6, 7.0f);
  int differ = 0;
  for (int round = 0; round < 4; ++round) {
    testing::Fills more({rows * kEmbd / 2, rows * kEmbd * 2}, 2, 7.0f);  // allocated and filled between replays
    differ += RunChecked(*m, 4 + round * 10, 10, fx.s());
    EXPECT_EQ(more.Overwritten(), 0) << "round " << round;
  }
  EXPECT_EQ(fills.Overwritten(), 0) << "of " << fills.elements() << " filled elements";
  EXPECT_EQ(differ, 0);
}

TEST_F(AotiGpuTest, ReleaseReturnsThePool) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  StatusOr<Method*> m = Register(fx, "decoder_release");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(RunChecked(*m, 0, 3, fx.s()), 0);
  const int64_t before = testing::ReservedAfterEmptyCache();
  ASSERT_EQ(RunChecked(*m, 3, 6, fx.s()), 0);
  const int64_t with_graph = testing::ReservedAfterEmptyCache();
  EXPECT_GT(with_graph, before);
  ASSERT_TRUE((*m)->Release().ok());
  const int64_t after = testing::ReservedAfterEmptyCache();
  EXPECT_LE(after, before) << "before " << before << ", with the graph " << with_graph;
}

TEST_F(AotiGpuTest, ABatchChangeIsRefused) {
  Fixture fx;
  c10::cuda::CUDAStreamGuard guard(fx.stream);
  StatusOr<Method*> m = Register(fx, "decoder_shape");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(RunChecked(*m, 0, 5, fx.s()), 0);
  at::Tensor x = at::zeros({2, kSeq, kEmbd}, Bf16()), y = at::zeros({2, kSeq, kEmbd}, Bf16());
  Status s = testing::Run(*m, x, y, fx.s());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // The refusal's fixed text, then the remedy encore adds.
  EXPECT_EQ(s.message().rfind("method 'decoder_shape': input 0 has size 2 in dim 0, captured with 4", 0), 0u) << s;
}

}  // namespace
}  // namespace encore::torch
