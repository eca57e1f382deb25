// SPDX-License-Identifier: Apache-2.0
// A Manager destroyed while the application's own stream capture runs
// (global or thread-local mode, on this thread; global mode on another):
// the capture ends, instantiates and replays right, and the method's
// memory is freed by the next encore call made outside it (Note [Owners
// destroyed inside a capture], core/internal/retired_owners.h). Destroying
// it there waited for its last launch and freed its memory inside the
// capture, which CUDA refused and which invalidated the capture.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/core/internal/retired_owners.h"
#include "encore/graph/manager.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kN = 1024;
constexpr size_t kScratch = size_t{64} << 20;  // the method's capture scratch: one arena slab

enum class Where { kGlobalHere, kThreadLocalHere, kGlobalOnAnotherThread };

std::string Name(const ::testing::TestParamInfo<Where>& p) {
  switch (p.param) {
    case Where::kGlobalHere: return "GlobalModeOnThisThread";
    case Where::kThreadLocalHere: return "ThreadLocalModeOnThisThread";
    case Where::kGlobalOnAnotherThread: return "GlobalModeOnAnotherThread";
  }
  return "unknown";
}

class ForeignCaptureGpuTest : public ::testing::TestWithParam<Where> {
 protected:
  void SetUp() override {
    ENCORE_REQUIRE_GPU();
    x_.Fill(3.0f);
    ManagerOptions o;
    o.logger = logs_.logger();
    manager_ = *Manager::Create(std::move(o));
    MethodSpec spec;
    spec.name = "scratchy";
    spec.constants = std::vector<Constant>{};
    MethodFlags f;
    f.warmup_calls = 1;
    spec.flags = f;
    spec.fn = [](Call& c) -> Status {
      ENCORE_ASSIGN_OR_RETURN(void* scratch, c.Allocate(kScratch));
      float* t = static_cast<float*>(scratch);
      cudaError_t e = testing::LaunchAffine(static_cast<const float*>(c.input(0).data), t, 2.0f, 1.0f, kN, c.stream());
      if (e == cudaSuccess) e = testing::LaunchAffine(t, static_cast<float*>(c.output(0).data), 1.0f, 0.0f, kN, c.stream());
      return e == cudaSuccess ? OkStatus() : CudaStatus(e, "LaunchAffine");
    };
    method_ = *manager_->Register(std::move(spec));
  }
  void TearDown() override {
    manager_.reset();
    RetiredOwners::Drain();
    if (stream_) cudaStreamDestroy(stream_);
  }

  // The warmup, the capture and a replay on the application's stream.
  void RunThrice() {
    for (int i = 0; i < 3; ++i) {
      y_.Fill(-1.0f);
      TensorRef in{x_.get(), DType::kFloat32, {kN}, {}}, out{y_.get(), DType::kFloat32, {kN}, {}};
      ASSERT_TRUE(method_->Run({&in, 1}, {&out, 1}, stream_).ok());
      ENCORE_CUDA_ASSERT(cudaStreamSynchronize(stream_));
      EXPECT_EQ(y_.Download(), std::vector<float>(kN, 7.0f)) << "call " << i;
    }
    ASSERT_EQ(method_->Report().replays, 1);
  }

  // The application's graph: z = x + 1, captured on `stream_`, the Manager
  // destroyed in the middle of the capture.
  cudaError_t CaptureWhileTheManagerGoes(cudaStreamCaptureMode mode, cudaGraph_t* graph) {
    cudaError_t err = cudaStreamBeginCapture(stream_, mode);
    if (err != cudaSuccess) return err;
    err = testing::LaunchAffine(x_.get(), z_.get(), 1.0f, 1.0f, kN, stream_);
    manager_.reset();
    const cudaError_t end = cudaStreamEndCapture(stream_, graph);
    return err != cudaSuccess ? err : end;
  }

  LogCapture logs_;
  DeviceBuffer<float> x_{kN}, y_{kN}, z_{kN};
  std::unique_ptr<Manager> manager_;
  Method* method_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

TEST_P(ForeignCaptureGpuTest, AManagerDestroyedInsideItLeavesTheCaptureWholeAndItsMemoryIsFreedAfter) {
  // A blocking stream: encore sees it capturing from any thread.
  ENCORE_CUDA_ASSERT(cudaStreamCreate(&stream_));
  RunThrice();
  z_.Fill(0.0f);
  cudaGraph_t graph = nullptr;
  cudaError_t captured = cudaSuccess;
  if (GetParam() == Where::kGlobalOnAnotherThread) {
    // The other thread begins and ends the capture; this one destroys the
    // Manager in between.
    std::promise<void> begun, destroyed;
    std::thread app([&] {
      captured = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal);
      if (captured == cudaSuccess) captured = testing::LaunchAffine(x_.get(), z_.get(), 1.0f, 1.0f, kN, stream_);
      begun.set_value();
      destroyed.get_future().wait();
      const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
      if (captured == cudaSuccess) captured = end;
    });
    begun.get_future().wait();
    manager_.reset();
    destroyed.set_value();
    app.join();
  } else {
    captured = CaptureWhileTheManagerGoes(
        GetParam() == Where::kGlobalHere ? cudaStreamCaptureModeGlobal : cudaStreamCaptureModeThreadLocal, &graph);
  }
  ASSERT_EQ(captured, cudaSuccess) << cudaGetErrorName(captured);
  EXPECT_EQ(RetiredOwners::Kept(), 1u);
  EXPECT_EQ(logs_.Count("release_deferred"), 1);

  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, stream_));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(stream_));
  EXPECT_EQ(z_.Download(), std::vector<float>(kN, 4.0f));
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));

  // The next encore call, outside any capture, frees what was kept.
  size_t free_kept = 0, free_after = 0, total = 0;
  ENCORE_CUDA_ASSERT(cudaMemGetInfo(&free_kept, &total));
  std::unique_ptr<Manager> next = *Manager::Create();
  EXPECT_EQ(RetiredOwners::Kept(), 0u);
  ENCORE_CUDA_ASSERT(cudaMemGetInfo(&free_after, &total));
  EXPECT_GE(free_after, free_kept + kScratch / 2) << "the method's arena slab was not freed";
}

INSTANTIATE_TEST_SUITE_P(Modes, ForeignCaptureGpuTest,
                         ::testing::Values(Where::kGlobalHere, Where::kThreadLocalHere, Where::kGlobalOnAnotherThread),
                         Name);

// A capture on a non-blocking stream that encore was never called on
// cannot be seen: the Manager goes at once, its waits and frees made with
// this thread's capture mode relaxed, and the capture must still hold.
TEST_F(ForeignCaptureGpuTest, AManagerDestroyedInsideACaptureEncoreCannotSeeGoesAtOnceAndTheCaptureHolds) {
  ENCORE_CUDA_ASSERT(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  RunThrice();
  cudaStream_t other = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  std::swap(stream_, other);  // the application's capture runs on a stream encore never saw
  z_.Fill(0.0f);
  cudaGraph_t graph = nullptr;
  const cudaError_t captured = CaptureWhileTheManagerGoes(cudaStreamCaptureModeGlobal, &graph);
  std::swap(stream_, other);
  ASSERT_EQ(captured, cudaSuccess) << cudaGetErrorName(captured);
  EXPECT_EQ(RetiredOwners::Kept(), 0u);
  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, other));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(other));
  EXPECT_EQ(z_.Download(), std::vector<float>(kN, 4.0f));
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
  ENCORE_CUDA_ASSERT(cudaStreamDestroy(other));
}

}  // namespace
}  // namespace encore
