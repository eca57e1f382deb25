// SPDX-License-Identifier: Apache-2.0
// GPU tests of the device check kernel: what record mode writes (and does
// not), first failure wins, a failure inside a replayed graph leaves the
// context usable, and trap mode, run in a child process, poisons the child's
// context.
#include "encore/graph/checks/internal/device_check_kernel.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/graph/checks/internal/mapped_check_record.h"
#include "encore/shims/masked_copy.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/process_util.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

class DeviceCheckTest : public ::encore::testing::GpuStreamTest {
 protected:
  void SetUp() override {
    GpuStreamTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto r = MappedCheckRecord::Create();
    ASSERT_TRUE(r.ok()) << r.status();
    record_ = std::move(*r);
    ASSERT_TRUE(cond_.ok() && seq_.ok());
  }
  const bool* cond() const { return cond_.as<const bool>(); }
  void SetCond(bool v) { ASSERT_EQ(testing::Fill(cond_.get(), v ? 1 : 0, 1), cudaSuccess); }
  void SetSeq(unsigned long long v) {
    ASSERT_EQ(testing::Upload(seq_.get(), &v, sizeof v), cudaSuccess);
  }
  void ExpectClean() {
    EXPECT_EQ(record_.host()->failed, 0);
    EXPECT_EQ(record_.host()->check_id, 0);
    EXPECT_EQ(record_.host()->seq, 0u);
    EXPECT_EQ(record_.host()->call_index, 0);
  }

  MappedCheckRecord record_;
  DeviceBuffer<> cond_{1};
  DeviceBuffer<> seq_{sizeof(unsigned long long)};
};

TEST_F(DeviceCheckTest, MappedRecordStartsClearWithADevicePointer) {
  ASSERT_NE(record_.host(), nullptr);
  ASSERT_NE(record_.device(), nullptr);
  ExpectClean();
}

TEST_F(DeviceCheckTest, FalseConditionRecordsIdAndCallIndex) {
  SetCond(false);
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 7, nullptr, 42, false, s()));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  EXPECT_EQ(record_.host()->failed, 1);
  EXPECT_EQ(record_.host()->check_id, 7);
  EXPECT_EQ(record_.host()->call_index, 42);
  EXPECT_EQ(record_.host()->seq, 0u);
}

TEST_F(DeviceCheckTest, FalseConditionWithSeqRecordsSeq) {
  SetCond(false);
  SetSeq(123456789012ull);
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 3, seq_.as<const unsigned long long>(), 99, false,
                                       s()));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  EXPECT_EQ(record_.host()->failed, 1);
  EXPECT_EQ(record_.host()->check_id, 3);
  EXPECT_EQ(record_.host()->seq, 123456789012ull);
  EXPECT_EQ(record_.host()->call_index, -1);
}

TEST_F(DeviceCheckTest, TrueConditionRecordsNothing) {
  SetCond(true);
  for (int i = 0; i < 5; ++i) {
    ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), i + 1, nullptr, i, false, s()));
  }
  // Trap mode with a true condition does not trap either.
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 9, nullptr, 9, true, s()));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  ExpectClean();
}

TEST_F(DeviceCheckTest, AnyNonzeroByteIsTrue) {
  ENCORE_CUDA_ASSERT(testing::Fill(cond_.get(), 0x80, 1));
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 1, nullptr, 1, false, s()));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  ExpectClean();
}

TEST_F(DeviceCheckTest, FirstFailureWinsUntilCleared) {
  SetCond(false);
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 1, nullptr, 10, false, s()));
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 2, nullptr, 20, false, s()));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  EXPECT_EQ(record_.host()->failed, 1);
  EXPECT_EQ(record_.host()->check_id, 1);
  EXPECT_EQ(record_.host()->call_index, 10);

  record_.Clear();
  ExpectClean();
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 2, nullptr, 20, false, s()));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  EXPECT_EQ(record_.host()->failed, 1);
  EXPECT_EQ(record_.host()->check_id, 2);
  EXPECT_EQ(record_.host()->call_index, 20);
}

TEST_F(DeviceCheckTest, FailureInsideReplayedGraphIsRecordedAndLaterKernelsRun) {
  // Graph: check(cond) then out[i] = src[i] (all-true mask).
  const int64_t n = 256;
  DeviceBuffer out(n * 4), src(n * 4), mask(n);
  ASSERT_TRUE(out.ok() && src.ok() && mask.ok());
  ENCORE_CUDA_ASSERT(testing::Fill(mask.get(), 1, n));
  TensorRef out_t{out.get(), DType::kInt32, {n}, {}};
  TensorRef src_t{src.get(), DType::kInt32, {n}, {}};

  cudaGraph_t graph = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  cudaError_t launch = LaunchDeviceCheck(cond(), record_.device(), 5, seq_.as<const unsigned long long>(), 0, false, s());
  Status copy = shims::MaskedCopy(out_t, mask.as<const bool>(), src_t, s());
  ENCORE_CUDA_ASSERT(cudaStreamEndCapture(s(), &graph));
  ASSERT_EQ(launch, cudaSuccess) << cudaGetErrorName(launch);
  ASSERT_TRUE(copy.ok()) << copy;
  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));

  auto replay = [&](bool cond_value, unsigned long long seq, int fill) {
    SetCond(cond_value);
    SetSeq(seq);
    ENCORE_CUDA_ASSERT(testing::Fill(src.get(), fill, n * 4));
    ENCORE_CUDA_ASSERT(testing::Fill(out.get(), 0, n * 4));
    ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
    ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
    std::vector<int32_t> got(n);
    ENCORE_CUDA_ASSERT(cudaMemcpy(got.data(), out.get(), n * 4, cudaMemcpyDeviceToHost));
    for (int32_t v : got) ASSERT_EQ(v, fill * 0x01010101) << "the kernel after the check did not run";
  };

  replay(true, 1, 1);
  ExpectClean();
  replay(false, 17, 2);  // fails; the copy after it still runs
  EXPECT_EQ(record_.host()->failed, 1);
  EXPECT_EQ(record_.host()->check_id, 5);
  EXPECT_EQ(record_.host()->seq, 17u);
  EXPECT_EQ(record_.host()->call_index, -1);
  replay(false, 18, 3);  // first failure still wins
  EXPECT_EQ(record_.host()->seq, 17u);
  record_.Clear();
  replay(true, 19, 4);
  ExpectClean();
  replay(false, 20, 5);
  EXPECT_EQ(record_.host()->seq, 20u);

  // The context is still usable for eager work.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ENCORE_CUDA_ASSERT(cudaDeviceSynchronize());
  void* p = nullptr;
  ENCORE_CUDA_ASSERT(cudaMalloc(&p, 1024));
  ENCORE_CUDA_ASSERT(cudaFree(p));
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
}

TEST_F(DeviceCheckTest, InjectedHostAllocFailureIsAStatus) {
  CudaFaultInjector inj;
  inj.FailNth(CudaCall::kHostAlloc, 1, cudaErrorMemoryAllocation);
  auto r = MappedCheckRecord::Create();
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  inj.FailNth(CudaCall::kHostGetDevicePointer, 1, cudaErrorInvalidValue);
  auto r2 = MappedCheckRecord::Create();
  EXPECT_FALSE(r2.ok());
  EXPECT_EQ(inj.Count(CudaCall::kFreeHost), 1) << "the host buffer leaked";
  auto r3 = MappedCheckRecord::Create();
  ASSERT_TRUE(r3.ok()) << r3.status();
}

// Exit codes of the trap child; distinctive so nothing else produces them.
constexpr int kTrapSeen = 77;
constexpr int kTrapNotSeen = 78;
constexpr int kChildSetupFailed = 79;
constexpr int kNoTrapContextFine = 76;
constexpr char kChildEnv[] = "ENCORE_SHIMS_DEVICE_CHECK_CHILD";

// Run only as a child of TrapPoisonsTheContextOfAChildProcess: launches a
// trap-mode check (condition from the environment) and exits with a code
// that says what the sync saw. _exit: the context may be gone, so skip
// teardown.
TEST(DeviceCheckChild, DISABLED_Trap) {
  const std::string mode = testing::GetEnv(kChildEnv);
  if (mode.empty()) GTEST_SKIP() << "run by DeviceCheckTest.TrapPoisonsTheContextOfAChildProcess";
  bool* cond = nullptr;
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess || cudaMalloc(&cond, 1) != cudaSuccess ||
      testing::Fill(cond, mode == "false" ? 0 : 1, 1) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "child: setup failed\n");
    _exit(kChildSetupFailed);
  }
  cudaError_t launch = LaunchDeviceCheck(cond, nullptr, 1, nullptr, 0, /*trap=*/true, s);
  cudaError_t sync = launch == cudaSuccess ? cudaStreamSynchronize(s) : launch;
  // A poisoned context fails every later call too.
  void* p = nullptr;
  cudaError_t after = cudaMalloc(&p, 16);
  std::fprintf(stderr, "child: launch=%s sync=%s after=%s\n", cudaGetErrorName(launch), cudaGetErrorName(sync),
               cudaGetErrorName(after));
  std::fflush(stderr);
  const bool trapped = sync == cudaErrorLaunchFailure || sync == cudaErrorAssert || sync == cudaErrorIllegalInstruction;
  if (trapped && IsContextLostError(sync) && after != cudaSuccess) _exit(kTrapSeen);
  if (sync == cudaSuccess && after == cudaSuccess) _exit(kNoTrapContextFine);
  _exit(kTrapNotSeen);
}

TEST_F(DeviceCheckTest, TrapPoisonsTheContextOfAChildProcess) {
  ENCORE_SKIP_UNDER_SANITIZER("the child's __trap() is deliberate, and the tool would count it as an error");
  pid_t trap = testing::SpawnSelfTest("DeviceCheckChild.DISABLED_Trap", {std::string(kChildEnv) + "=false"});
  ASSERT_GT(trap, 0) << std::strerror(errno);
  testing::ChildExit ex = testing::WaitChild(trap, std::chrono::seconds(120));
  EXPECT_TRUE(ex.exited && ex.exit_code == kTrapSeen) << "trap child " << ex.Describe();

  // The same child with a true condition does not trap: the code above comes
  // from the trap, not from the child's setup.
  pid_t fine = testing::SpawnSelfTest("DeviceCheckChild.DISABLED_Trap", {std::string(kChildEnv) + "=true"});
  ASSERT_GT(fine, 0) << std::strerror(errno);
  testing::ChildExit ok = testing::WaitChild(fine, std::chrono::seconds(120));
  EXPECT_TRUE(ok.exited && ok.exit_code == kNoTrapContextFine) << "control child " << ok.Describe();

  // And this process's context is untouched.
  ENCORE_CUDA_ASSERT(cudaDeviceSynchronize());
  SetCond(true);
  ENCORE_CUDA_ASSERT(LaunchDeviceCheck(cond(), record_.device(), 1, nullptr, 0, false, s()));
  ENCORE_CUDA_ASSERT(cudaStreamSynchronize(s()));
  ExpectClean();
}

}  // namespace
}  // namespace encore
