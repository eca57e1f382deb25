// SPDX-License-Identifier: Apache-2.0
// GPU smoke test: capture kernel and memset nodes, instantiate, replay, check
// the values; then the same through the owners' failure paths.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/core/internal/stream.h"
#include "encore/graph/internal/graph.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

TEST(GraphSmokeTest, CaptureInstantiateReplayComputesValues) {
  ENCORE_REQUIRE_GPU();
  constexpr int64_t n = 1000;
  auto stream = Stream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  float* buf = nullptr;
  ENCORE_CUDA_ASSERT(cudaMalloc(&buf, n * sizeof(float)));
  cudaStream_t s = stream->get();

  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  ENCORE_CUDA_ASSERT(cudaMemsetAsync(buf, 0, n * sizeof(float), s));
  ENCORE_CUDA_ASSERT(testing::LaunchIncrementK(buf, n, 3, s));
  ENCORE_CUDA_ASSERT(testing::LaunchAffine(buf, buf, 2.0f, 1.0f, n, s));
  cudaGraph_t raw = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamEndCapture(s, &raw));
  Graph graph(raw);
  auto count = graph.NodeCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 5u);  // memset + 3 increments + affine

  auto exec = GraphExec::Instantiate(graph);
  ASSERT_TRUE(exec.ok()) << exec.status();
  std::vector<float> host(n);
  for (int replay = 0; replay < 3; ++replay) {
    ENCORE_CUDA_ASSERT(cudaMemsetAsync(buf, 0xff, n * sizeof(float), s));  // poison
    ASSERT_TRUE(exec->Launch(s).ok());
    ENCORE_CUDA_ASSERT(cudaMemcpyAsync(host.data(), buf, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(host[i], 7.0f) << "replay " << replay << " i " << i;
  }
  ENCORE_CUDA_ASSERT(cudaFree(buf));
}

TEST(GraphSmokeTest, InjectedInstantiateFailureIsAStatus) {
  ENCORE_REQUIRE_GPU();
  auto g = Graph::Create();
  ASSERT_TRUE(g.ok());
  CudaFaultInjector inj;
  inj.FailNth(CudaCall::kGraphInstantiate, 1, cudaErrorMemoryAllocation);
  auto exec = GraphExec::Instantiate(*g);
  ASSERT_FALSE(exec.ok());
  EXPECT_EQ(exec.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(exec.status().message().find("cudaGraphInstantiateWithFlags"), std::string_view::npos);
  // The next instantiate is real and succeeds.
  auto exec2 = GraphExec::Instantiate(*g);
  EXPECT_TRUE(exec2.ok()) << exec2.status();
  EXPECT_EQ(inj.Count(CudaCall::kGraphInstantiate), 2);
}

}  // namespace
}  // namespace encore
