// SPDX-License-Identifier: Apache-2.0
// Call::Check on a real GPU: record mode in eager calls and replayed graphs,
// off mode (no node), and trap mode in a child process.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/graph/manager.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/test_kernels.h"

extern char** environ;

namespace encore {
namespace {

using testing::DeviceBuffer;
constexpr int64_t kN = 512;
constexpr float kSentinel = -7.0f;

MethodSpec Checked(CheckMode mode, int warmup) {
  MethodSpec spec;
  spec.name = "probs";
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = warmup;
  f.checks = mode;
  spec.flags = f;
  spec.fn = [](Call& c) -> Status {
    ENCORE_ASSIGN_OR_RETURN(void* flag, c.Allocate(sizeof(bool)));
    const float* in = static_cast<const float*>(c.input(0).data);
    cudaError_t e = testing::LaunchAllPositive(in, c.input(0).numel(), static_cast<bool*>(flag), c.stream());
    if (e != cudaSuccess) return CudaStatus(e, "LaunchAllPositive");
    ENCORE_RETURN_IF_ERROR(c.Check(static_cast<const bool*>(flag), "inputs must be positive"));
    return testing::AffineCall(c, 2.0f, 1.0f);
  };
  return spec;
}

struct Env {
  std::unique_ptr<Manager> mgr;
  Method* m = nullptr;
  cudaStream_t s = nullptr;
  DeviceBuffer<float> good{kN}, bad{kN}, out{kN};
  TensorRef tg, tb, to;
  LogCapture logs;

  explicit Env(CheckMode mode, int warmup = 1) {
    ManagerOptions o;
    o.logger = logs.logger();
    mgr = *Manager::Create(o);
    m = *mgr->Register(Checked(mode, warmup));
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    good.Fill(1.0f);
    std::vector<float> b(kN, 1.0f);
    b[kN / 2] = -1.0f;
    bad.Upload(b);
    tg = {good.get(), DType::kFloat32, {kN}, {}};
    tb = {bad.get(), DType::kFloat32, {kN}, {}};
    to = {out.get(), DType::kFloat32, {kN}, {}};
  }
  ~Env() {
    mgr.reset();
    cudaStreamDestroy(s);
  }
  Status Run(bool use_bad) { return m->Run({use_bad ? &tb : &tg, 1}, {&to, 1}, s); }
};

TEST(CheckGpuTest, RecordModeInReplayedGraphReportsNextCallAndContextSurvives) {
  ENCORE_REQUIRE_GPU();
  Env env(CheckMode::kRecord);
  ASSERT_TRUE(env.Run(false).ok());  // 1 warmup
  ASSERT_TRUE(env.Run(false).ok());  // 2 capture
  ASSERT_TRUE(env.Run(false).ok());  // 3 replay
  ASSERT_TRUE(env.Run(true).ok());   // 4 replay, check fails on the device
  ASSERT_EQ(cudaStreamSynchronize(env.s), cudaSuccess);
  env.out.Fill(kSentinel);
  Status s = env.Run(false);  // 5: reports call 4 and does not run
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "method 'probs': check failed: inputs must be positive (call 4)");
  for (float v : env.out.Download()) ASSERT_EQ(v, kSentinel);
  // The failure was cleared and the context is usable: later calls run.
  ASSERT_TRUE(env.Run(false).ok());
  EXPECT_EQ(env.out.Download()[0], 3.0f);
  MethodReport r = env.m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 3);
  EXPECT_EQ(r.check_failures, 1);
  // Bound directly; the staging head stays, copying nothing, to bump the
  // check sequence that named call 4: head, all-positive, check, affine,
  // completion record.
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.graph_nodes, 5u);
  auto ev = env.logs.Find("check_failed", "method", "probs");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->field("call"), "4");
}

TEST(CheckGpuTest, RecordModeEagerAndSynchronize) {
  ENCORE_REQUIRE_GPU();
  Env env(CheckMode::kRecord, /*warmup=*/3);
  ASSERT_TRUE(env.Run(false).ok());  // 1
  ASSERT_TRUE(env.Run(true).ok());   // 2 fails on the device
  Status s = env.m->Synchronize(env.s);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "method 'probs': check failed: inputs must be positive (call 2)");
  EXPECT_TRUE(env.m->Synchronize(env.s).ok());  // cleared
  ASSERT_TRUE(env.Run(false).ok());
  EXPECT_EQ(env.m->Report().calls, 3);
}

// Call indices count the calls that ran; a call that only reports a failure
// does not run and takes no index.
TEST(CheckGpuTest, EachReportNamesItsOwnCallAcrossReplays) {
  ENCORE_REQUIRE_GPU();
  Env env(CheckMode::kRecord, /*warmup=*/0);
  ASSERT_TRUE(env.Run(true).ok());  // call 1: capture + first launch, fails
  ASSERT_EQ(cudaStreamSynchronize(env.s), cudaSuccess);
  Status s = env.Run(false);  // reports call 1, does not run
  EXPECT_EQ(s.message(), "method 'probs': check failed: inputs must be positive (call 1)");
  ASSERT_TRUE(env.Run(false).ok());  // call 2: replay
  ASSERT_TRUE(env.Run(false).ok());  // call 3: replay
  ASSERT_TRUE(env.Run(true).ok());   // call 4: replay, fails
  ASSERT_EQ(cudaStreamSynchronize(env.s), cudaSuccess);
  s = env.Run(false);  // reports call 4
  EXPECT_EQ(s.message(), "method 'probs': check failed: inputs must be positive (call 4)");
  EXPECT_TRUE(env.Run(false).ok());  // call 5
  MethodReport r = env.m->Report();
  EXPECT_EQ(r.check_failures, 2);
  EXPECT_EQ(r.calls, 5);
  EXPECT_EQ(r.replays, 4);
}

TEST(CheckGpuTest, OffModeLaunchesNothing) {
  ENCORE_REQUIRE_GPU();
  Env env(CheckMode::kOff, /*warmup=*/0);
  ASSERT_TRUE(env.Run(true).ok());
  ASSERT_TRUE(env.Run(true).ok());
  EXPECT_TRUE(env.m->Synchronize(env.s).ok());
  // Bound directly, and no check node, so no staging head either:
  // all-positive, affine, completion record.
  EXPECT_EQ(env.m->Report().binding, Binding::kDirect) << env.m->Report().binding_reason;
  EXPECT_EQ(env.m->Report().graph_nodes, 3u);
  EXPECT_EQ(env.m->Report().check_failures, 0);
}

// The child half of the trap test: runs only when the parent sets the env var.
TEST(CheckGpuTest, TrapChildBody) {
  if (!std::getenv("ENCORE_TRAP_CHILD")) GTEST_SKIP() << "runs only as the child of TrapModeLosesTheContext";
  alarm(60);  // never hang: SIGALRM ends the child and the parent sees it
  Env env(CheckMode::kTrap, /*warmup=*/0);
  (void)env.Run(true);
  Status s = env.m->Synchronize(env.s);
  fprintf(stderr, "child: %s\n", s.ToString().c_str());
  bool lost = s.code() == StatusCode::kUnavailable &&
              s.message().find("the CUDA context is lost") != std::string_view::npos;
  Status next = env.Run(false);
  fprintf(stderr, "child next call: %s\n", next.ToString().c_str());
  bool next_lost = next.code() == StatusCode::kUnavailable;
  _exit(lost && next_lost ? 42 : 43);
}

TEST(CheckGpuTest, TrapModeLosesTheContextInAChildAndTheParentSeesIt) {
  ENCORE_REQUIRE_GPU();
  ENCORE_SKIP_UNDER_SANITIZER("the child's __trap() is deliberate, and the tool would count it as an error");
  std::string filter = "--gtest_filter=CheckGpuTest.TrapChildBody";
  char* argv[] = {const_cast<char*>("/proc/self/exe"), filter.data(), nullptr};
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  std::string flag = "ENCORE_TRAP_CHILD=1";
  envp.push_back(flag.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 42) << "the child did not see its context reported lost";
  // This process's context is untouched.
  Env env(CheckMode::kRecord, 0);
  EXPECT_TRUE(env.Run(false).ok());
}

}  // namespace
}  // namespace encore
