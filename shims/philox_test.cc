// SPDX-License-Identifier: Apache-2.0
// GPU tests of Philox: bit-for-bit against the CPU reference, same seed same
// numbers, fresh numbers on every replay of a captured draw with the device
// offset advancing exactly, normal and uniform statistics, the injected
// seed-copy failure, and four processes started together drawing four
// different streams.
#include "encore/shims/philox.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/core/internal/stream.h"
#include "encore/shims/internal/philox_reference.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/process_util.h"

namespace encore::shims {
namespace {

using testing::DeviceBuffer;

uint64_t Counters(int64_t n) { return static_cast<uint64_t>((n + 3) / 4); }

class PhiloxTest : public ::encore::testing::GpuStreamTest {
 protected:
  std::vector<float> Download(const float* d, int64_t n) {
    std::vector<float> h(n);
    EXPECT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }

};

void ExpectBitEqual(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << ": element " << i << " got " << got[i] << " want " << want[i];
  }
}

TEST_F(PhiloxTest, UniformMatchesCpuReferenceBitForBit) {
  const uint64_t seed = 0x0123456789abcdefull;
  auto gen = Philox::Create(seed);
  ASSERT_TRUE(gen.ok());
  const int64_t big = (1 << 20) + 3;  // several grid-stride passes and a ragged tail
  DeviceBuffer buf((big + 4) * sizeof(float));
  ASSERT_TRUE(buf.ok());
  float* d = buf.as<float>();
  uint64_t offset = 0;
  // Sizes with every remainder mod 4, aligned and misaligned for float4 stores.
  const struct {
    int64_t n;
    int shift;
  } draws[] = {{1001, 0}, {37, 1}, {4, 0}, {1, 3}, {2, 2}, {big, 0}, {big, 1}, {1024, 0}};
  for (const auto& dr : draws) {
    Status st = gen->Uniform(d + dr.shift, dr.n, s());
    ASSERT_TRUE(st.ok()) << st;
    ExpectBitEqual(Download(d + dr.shift, dr.n), PhiloxUniformReference(seed, offset, dr.n),
                   "n=" + std::to_string(dr.n) + " shift=" + std::to_string(dr.shift));
    offset += Counters(dr.n);
    auto off = gen->Offset(s());
    ASSERT_TRUE(off.ok()) << off.status();
    EXPECT_EQ(*off, offset);
  }
  EXPECT_EQ(gen->seed(), std::optional<uint64_t>(seed));
}

TEST_F(PhiloxTest, NormalMatchesCpuReferenceClosely) {
  const uint64_t seed = 77;
  auto gen = Philox::Create(seed);
  ASSERT_TRUE(gen.ok());
  DeviceBuffer buf(4099 * sizeof(float));
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(gen->Uniform(buf.as<float>(), 10, s()).ok());  // offset 3
  ASSERT_TRUE(gen->Normal(buf.as<float>(), 4099, s()).ok());
  std::vector<float> got = Download(buf.as<float>(), 4099);
  std::vector<float> want = PhiloxNormalReference(seed, 3, 4099);
  for (size_t i = 0; i < got.size(); ++i) {
    // Device and host log/sin/cos differ in the last bits, not more.
    ASSERT_NEAR(got[i], want[i], 1e-5f * std::max(1.0f, std::fabs(want[i]))) << i;
  }
  auto off = gen->Offset(s());
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, 3 + Counters(4099));
}

TEST_F(PhiloxTest, UniformIsInZeroOneWithUniformMoments) {
  auto gen = Philox::Create(2024);
  ASSERT_TRUE(gen.ok());
  const int64_t n = 1 << 20;
  DeviceBuffer buf(n * sizeof(float));
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(gen->Uniform(buf.as<float>(), n, s()).ok());
  std::vector<float> u = Download(buf.as<float>(), n);
  double sum = 0, sum_sq = 0;
  for (float v : u) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.005);
  EXPECT_NEAR(var, 1.0 / 12, 0.005);
}

TEST_F(PhiloxTest, NormalHasMeanZeroVarianceOne) {
  auto gen = Philox::Create();  // from std::random_device
  ASSERT_TRUE(gen.ok());
  const int64_t n = 1000000;
  DeviceBuffer buf(n * sizeof(float));
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(gen->Normal(buf.as<float>(), n, s()).ok());
  std::vector<float> z = Download(buf.as<float>(), n);
  double sum = 0, sum_sq = 0;
  for (float v : z) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_LT(std::fabs(mean), 0.01) << "seed " << *gen->seed();
  EXPECT_LT(std::fabs(var - 1.0), 0.01) << "seed " << *gen->seed();
}

TEST_F(PhiloxTest, SameSeedSameNumbersDifferentSeedDifferentNumbers) {
  auto a = Philox::Create(42);
  auto b = Philox::Create(42);
  auto c = Philox::Create(43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const int64_t n = 999;
  DeviceBuffer da(n * 4), db(n * 4), dc(n * 4);
  ASSERT_TRUE(da.ok() && db.ok() && dc.ok());
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(a->Uniform(da.as<float>(), n, s()).ok());
    ASSERT_TRUE(b->Uniform(db.as<float>(), n, cudaStreamLegacy).ok());
    ASSERT_TRUE(c->Uniform(dc.as<float>(), n, s()).ok());
    ENCORE_CUDA_ASSERT(cudaDeviceSynchronize());
    auto ha = Download(da.as<float>(), n), hb = Download(db.as<float>(), n), hc = Download(dc.as<float>(), n);
    ExpectBitEqual(ha, hb, "uniform round " + std::to_string(round));
    EXPECT_NE(ha, hc);
    ASSERT_TRUE(a->Normal(da.as<float>(), n, s()).ok());
    ASSERT_TRUE(b->Normal(db.as<float>(), n, s()).ok());
    ExpectBitEqual(Download(da.as<float>(), n), Download(db.as<float>(), n), "normal round " + std::to_string(round));
  }
}

TEST_F(PhiloxTest, CapturedDrawReplaysFreshNumbersAndAdvancesOffset) {
  const uint64_t seed = 0xfeedface12345678ull;
  auto gen = Philox::Create(seed);
  ASSERT_TRUE(gen.ok());
  // 17501 counters: several blocks share the offset, and n is not a
  // multiple of 4.
  const int64_t n = 70001;
  const uint64_t c = Counters(n);
  DeviceBuffer buf(n * sizeof(float));
  ASSERT_TRUE(buf.ok());
  float* d = buf.as<float>();
  // The first draw sets the generator up; it must happen outside the capture.
  ASSERT_TRUE(gen->Uniform(d, n, s()).ok());
  ExpectBitEqual(Download(d, n), PhiloxUniformReference(seed, 0, n), "eager draw");

  cudaGraph_t graph = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  Status st = gen->Uniform(d, n, s());
  auto refused = gen->Offset(s());
  cudaError_t end = cudaStreamEndCapture(s(), &graph);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(IsCaptureRefusal(refused.status())) << refused.status();
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
  // Capture records without running: the offset has not moved.
  auto before = gen->Offset(s());
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(*before, c);

  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));
  const int kReplays = 100;
  std::set<std::vector<float>> seen;
  for (int r = 0; r < kReplays; ++r) {
    ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
    std::vector<float> got = Download(d, n);
    ExpectBitEqual(got, PhiloxUniformReference(seed, c * (1 + r), n), "replay " + std::to_string(r));
    if (HasFatalFailure()) break;
    seen.insert(std::move(got));
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kReplays)) << "some replays drew the same numbers";
  auto after = gen->Offset(s());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, c + kReplays * c);
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
}

TEST_F(PhiloxTest, CapturedNormalAndUniformInOneGraphAdvanceTogether) {
  const uint64_t seed = 5;
  auto gen = Philox::Create(seed);
  ASSERT_TRUE(gen.ok());
  DeviceBuffer u(8 * 4), z(6 * 4);
  ASSERT_TRUE(u.ok() && z.ok());
  ASSERT_TRUE(gen->Uniform(u.as<float>(), 1, s()).ok());  // set up; offset 1
  cudaGraph_t graph = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeGlobal));
  Status a = gen->Uniform(u.as<float>(), 8, s());  // 2 counters
  Status b = gen->Normal(z.as<float>(), 6, s());   // 2 counters
  ENCORE_CUDA_ASSERT(cudaStreamEndCapture(s(), &graph));
  ASSERT_TRUE(a.ok() && b.ok()) << a << b;
  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < 3; ++r) {
    ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
    const uint64_t base = 1 + 4 * r;
    ExpectBitEqual(Download(u.as<float>(), 8), PhiloxUniformReference(seed, base, 8), "uniform");
    std::vector<float> gz = Download(z.as<float>(), 6), wz = PhiloxNormalReference(seed, base + 2, 6);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(gz[i], wz[i], 1e-4f) << "replay " << r << " i " << i;
  }
  auto off = gen->Offset(s());
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, 13u);
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
}

TEST_F(PhiloxTest, FirstDrawInsideACaptureIsRefusedAndTheCaptureSurvives) {
  auto gen = Philox::Create(9);
  ASSERT_TRUE(gen.ok());
  DeviceBuffer buf(16 * 4);
  ASSERT_TRUE(buf.ok());
  CudaFaultInjector inj;
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  Status st = gen->Uniform(buf.as<float>(), 16, s());
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  ENCORE_CUDA_ASSERT(cudaStreamIsCapturing(s(), &cs));
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(s(), &graph);
  EXPECT_TRUE(IsCaptureRefusal(st)) << st;
  EXPECT_NE(st.message().find("Philox"), std::string_view::npos) << st;
  EXPECT_EQ(cs, cudaStreamCaptureStatusActive);
  EXPECT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
  EXPECT_EQ(inj.Count(CudaCall::kMalloc), 0) << "allocated inside the capture";
  EXPECT_FALSE(gen->initialized());
  if (graph) ENCORE_CUDA_ASSERT(cudaGraphDestroy(graph));
  // Outside the capture the same generator sets up and draws from offset 0.
  ASSERT_TRUE(gen->Uniform(buf.as<float>(), 16, s()).ok());
  ExpectBitEqual(Download(buf.as<float>(), 16), PhiloxUniformReference(9, 0, 16), "after refusal");
}

TEST_F(PhiloxTest, InjectedSeedCopyFailureIsLoggedLeaksNothingAndNextDrawWorks) {
  LogCapture logs;
  PhiloxOptions options;
  options.logger = logs.logger();
  const uint64_t seed = 31337;
  DeviceBuffer buf(64 * 4);
  ASSERT_TRUE(buf.ok());
  ENCORE_CUDA_ASSERT(cudaDeviceSynchronize());
  size_t free_before = 0, total = 0;
  ENCORE_CUDA_ASSERT(cudaMemGetInfo(&free_before, &total));
  {
    auto gen = Philox::Create(seed, options);
    ASSERT_TRUE(gen.ok());
    CudaFaultInjector inj;
    inj.FailNth(CudaCall::kMemcpyAsync, 1, cudaErrorInvalidValue);
    Status st = gen->Uniform(buf.as<float>(), 64, s());
    ASSERT_FALSE(st.ok());
    EXPECT_FALSE(IsCaptureRefusal(st));
    EXPECT_NE(st.message().find("cudaMemcpyAsync"), std::string_view::npos) << st;
    EXPECT_EQ(inj.Failed(CudaCall::kMemcpyAsync), 1);
    EXPECT_FALSE(gen->initialized());
    EXPECT_EQ(inj.Count(CudaCall::kMalloc), 1);
    EXPECT_EQ(inj.Count(CudaCall::kFree), 1) << "the device state leaked";
    ASSERT_EQ(logs.Count("philox_init_failed"), 1);
    auto ev = logs.Find("philox_init_failed");
    EXPECT_EQ(ev->level, spdlog::level::err);
    EXPECT_NE(ev->field("reason").find("cudaMemcpyAsync"), std::string::npos) << ev->line;

    // The next draw tries again and succeeds, from the start of the stream.
    Status again = gen->Uniform(buf.as<float>(), 64, s());
    ASSERT_TRUE(again.ok()) << again;
    EXPECT_TRUE(gen->initialized());
    ExpectBitEqual(Download(buf.as<float>(), 64), PhiloxUniformReference(seed, 0, 64), "retry");
    EXPECT_EQ(inj.Count(CudaCall::kMalloc), 2);
    EXPECT_EQ(inj.Count(CudaCall::kFree), 1);
    EXPECT_EQ(logs.Count("philox_init_failed"), 1);
    // Let the generator go while the injector still counts.
    { Philox gone = std::move(*gen); }
    EXPECT_EQ(inj.Count(CudaCall::kFree), 2);
    EXPECT_EQ(inj.Count(CudaCall::kMalloc), inj.Count(CudaCall::kFree));
  }
  ENCORE_CUDA_ASSERT(cudaDeviceSynchronize());
  size_t free_after = 0;
  ENCORE_CUDA_ASSERT(cudaMemGetInfo(&free_after, &total));
  EXPECT_GE(free_after, free_before) << "device memory not returned";
}

TEST_F(PhiloxTest, InjectedMallocFailureIsLoggedAndFreesNothing) {
  LogCapture logs;
  PhiloxOptions options;
  options.logger = logs.logger();
  auto gen = Philox::Create(1, options);
  ASSERT_TRUE(gen.ok());
  DeviceBuffer buf(16);
  ASSERT_TRUE(buf.ok());
  CudaFaultInjector inj;
  inj.FailNth(CudaCall::kMalloc, 1, cudaErrorMemoryAllocation);
  Status st = gen->Uniform(buf.as<float>(), 4, s());
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st;
  EXPECT_EQ(inj.Count(CudaCall::kFree), 0);
  EXPECT_EQ(logs.Count("philox_init_failed"), 1);
  ASSERT_TRUE(gen->Uniform(buf.as<float>(), 4, s()).ok());
}

TEST_F(PhiloxTest, RandomDeviceSeedsDifferBetweenGenerators) {
  auto a = Philox::Create();
  auto b = Philox::Create();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->seed(), std::nullopt);
  DeviceBuffer buf(16 * 4);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(a->Uniform(buf.as<float>(), 16, s()).ok());
  ASSERT_TRUE(b->Uniform(buf.as<float>(), 16, s()).ok());
  ASSERT_TRUE(a->seed().has_value() && b->seed().has_value());
  EXPECT_NE(*a->seed(), *b->seed());
  // The drawn seed is the one in use.
  ExpectBitEqual(Download(buf.as<float>(), 16), PhiloxUniformReference(*b->seed(), 0, 16), "random_device seed");
}

constexpr char kChildOutEnv[] = "ENCORE_SHIMS_PHILOX_CHILD_OUT";
constexpr int kDraws = 16;

// Run only as a child of FourProcessesDrawFourStreams: draws from a generator
// seeded by std::random_device and writes the seed and draws to a file.
TEST(PhiloxChild, DISABLED_DrawForParent) {
  const std::string path = testing::GetEnv(kChildOutEnv);
  if (path.empty()) GTEST_SKIP() << "run by PhiloxTest.FourProcessesDrawFourStreams";
  ENCORE_REQUIRE_GPU();
  auto gen = Philox::Create();
  ASSERT_TRUE(gen.ok());
  DeviceBuffer buf(kDraws * sizeof(float));
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(gen->Uniform(buf.as<float>(), kDraws, cudaStreamLegacy).ok());
  float h[kDraws];
  ENCORE_CUDA_ASSERT(cudaMemcpy(h, buf.get(), sizeof h, cudaMemcpyDeviceToHost));
  std::ofstream out(path);
  out << "seed " << *gen->seed() << "\n";
  for (float v : h) out << std::hexfloat << v << " ";
  out << "\n";
  ASSERT_TRUE(out.good());
}

TEST_F(PhiloxTest, FourProcessesDrawFourStreams) {
  constexpr int kChildren = 4;
  std::vector<std::string> paths;
  std::vector<pid_t> pids;
  for (int i = 0; i < kChildren; ++i) {
    paths.push_back(testing::TempPath("philox_child_" + std::to_string(i)));
    std::remove(paths.back().c_str());
  }
  // Start all four before waiting for any.
  for (int i = 0; i < kChildren; ++i) {
    pid_t pid = testing::SpawnSelfTest("PhiloxChild.DISABLED_DrawForParent",
                                       {std::string(kChildOutEnv) + "=" + paths[i]});
    ASSERT_GT(pid, 0) << "spawn failed: " << std::strerror(errno);
    pids.push_back(pid);
  }
  std::set<std::string> seeds, draws;
  for (int i = 0; i < kChildren; ++i) {
    testing::ChildExit ex = testing::WaitChild(pids[i], std::chrono::seconds(120));
    ASSERT_TRUE(ex.exited && ex.exit_code == 0) << "child " << i << " " << ex.Describe();
    std::istringstream in(testing::ReadFile(paths[i]));
    std::string word, seed, values;
    in >> word >> seed;
    ASSERT_EQ(word, "seed") << "child " << i << " wrote nothing to " << paths[i];
    std::getline(in, values);  // rest of the seed line
    std::getline(in, values);
    ASSERT_FALSE(values.empty()) << "child " << i;
    seeds.insert(seed);
    draws.insert(values);
    std::remove(paths[i].c_str());
  }
  EXPECT_EQ(seeds.size(), static_cast<size_t>(kChildren)) << "two processes got the same seed";
  EXPECT_EQ(draws.size(), static_cast<size_t>(kChildren)) << "two processes drew the same numbers";
}

}  // namespace
}  // namespace encore::shims
