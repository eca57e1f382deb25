// SPDX-License-Identifier: Apache-2.0
// Observability on a real GPU: graph dumps (written, parsed, the method's kernel
// and encore's own nodes in them, names made safe), capture times in the
// report, refusals that name the remedy and are rate-limited in the log, and
// owners' destroy failures on the application's logger.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/log.h"
#include "encore/graph/manager.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

namespace fs = std::filesystem;
using testing::DeviceBuffer;

TensorRef F32(void* p, Shape s) { return TensorRef{p, DType::kFloat32, s, {}}; }

MethodSpec Affine(std::string name, MethodFlags flags = {}) {
  MethodSpec spec;
  spec.name = std::move(name);
  spec.constants = std::vector<Constant>{};
  spec.flags = flags;
  spec.fn = [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
  return spec;
}

MethodFlags WarmupZero() {
  MethodFlags f;
  f.warmup_calls = 0;
  return f;
}

// A staged graph: encore's staging nodes are what the dump test looks for.
MethodFlags StagedWarmupZero() {
  MethodFlags f = WarmupZero();
  f.binding = Binding::kStaged;
  return f;
}

std::string TempDir(const std::string& leaf) {
  const char* t = std::getenv("TEST_TMPDIR");
  fs::path p = fs::path(t ? t : fs::temp_directory_path().string()) / leaf;
  fs::remove_all(p);
  return p.string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

struct Fixture {
  LogCapture logs;
  std::unique_ptr<Manager> manager;
  cudaStream_t stream = nullptr;
  explicit Fixture(std::string dump_dir = {}) {
    ManagerOptions o;
    o.logger = logs.logger();
    o.log_format = LogFormat::kKeyValue;
    o.graph_dump_dir = std::move(dump_dir);
    auto m = Manager::Create(o);
    EXPECT_TRUE(m.ok()) << m.status();
    manager = *std::move(m);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  ~Fixture() {
    manager.reset();
    cudaStreamDestroy(stream);
  }
  // Runs `m` once on fresh (2,8) buffers and checks out = 2 in + 1.
  void RunAndCheck(Method* m) {
    DeviceBuffer<float> in(16), out(16);
    std::vector<float> v(16);
    for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
    in.Upload(v);
    out.Fill(-1.0f);
    TensorRef i = F32(in.get(), {2, 8}), o = F32(out.get(), {2, 8});
    ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, stream).ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<float> got = out.Download();
    for (int k = 0; k < 16; ++k) ASSERT_EQ(got[k], 2.0f * k + 1.0f) << k;
  }
};

int CurrentDevice() {
  int d = -1;
  EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
  return d;
}

TEST(ObservabilityGpuTest, EachCaptureIsDumpedAsDotWithTheMethodsKernelAndEncoresNodes) {
  ENCORE_REQUIRE_GPU();
  const std::string dir = TempDir("dumps");
  Fixture fx(dir);
  auto m = fx.manager->Register(Affine("forward", StagedWarmupZero()));
  ASSERT_TRUE(m.ok()) << m.status();
  fx.RunAndCheck(*m);  // captures
  fx.RunAndCheck(*m);  // replays; no second dump
  const std::string want = dir + "/forward.dev" + std::to_string(CurrentDevice()) + ".graph1.dot";
  ASSERT_EQ(fx.logs.Count("graph_dumped"), 1);
  auto ev = fx.logs.Find("graph_dumped");
  EXPECT_EQ(ev->field("path"), want);
  EXPECT_EQ(ev->field("method"), "forward");
  ASSERT_TRUE(fs::exists(want)) << want;
  const std::string dot = ReadFile(want);
  EXPECT_EQ(dot.rfind("digraph", 0), 0u) << dot.substr(0, 200);
  EXPECT_NE(dot.find("AffineKernel"), std::string::npos) << "the method's kernel";
  EXPECT_NE(dot.find("StageKernel"), std::string::npos) << "encore's staging node";
  const std::string low = Lower(dot);
  EXPECT_TRUE(low.find("event_record") != std::string::npos || low.find("eventrecord") != std::string::npos ||
              low.find("event record") != std::string::npos)
      << "encore's completion record node";
  // One node per kernel/record at least: the graph's node count is the
  // report's.
  EXPECT_GE((*m)->Report().graph_nodes, 3u);
}

TEST(ObservabilityGpuTest, MethodNamesThatLookLikePathsDumpInsideTheDirectory) {
  ENCORE_REQUIRE_GPU();
  const std::string dir = TempDir("nested/dumps");
  Fixture fx(dir);
  for (const char* name : {"../../x", "a/b", "a%2Fb"}) {
    auto m = fx.manager->Register(Affine(name, WarmupZero()));
    ASSERT_TRUE(m.ok()) << m.status();
    fx.RunAndCheck(*m);
  }
  auto dumped = fx.logs.Named("graph_dumped");
  ASSERT_EQ(dumped.size(), 3u);
  std::vector<std::string> paths;
  for (const auto& e : dumped) {
    const fs::path p(e.field("path"));
    EXPECT_EQ(p.parent_path(), fs::path(dir)) << p;
    EXPECT_TRUE(fs::exists(p)) << p;
    paths.push_back(p.string());
  }
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(std::unique(paths.begin(), paths.end()), paths.end()) << "two methods share a file";
  // Nothing escaped: the directory holds exactly the three files, and
  // nothing named x* appeared two levels up.
  int files = 0;
  for (const auto& f : fs::directory_iterator(dir)) files += f.is_regular_file();
  EXPECT_EQ(files, 3);
  for (const auto& f : fs::directory_iterator(fs::path(dir).parent_path().parent_path())) {
    EXPECT_NE(f.path().filename().string().rfind("x.dev", 0), 0u) << f.path();
  }
}

TEST(ObservabilityGpuTest, TheEnvironmentVariableSetsTheDumpDirectory) {
  ENCORE_REQUIRE_GPU();
  const std::string dir = TempDir("env_dumps");
  ASSERT_EQ(setenv("ENCORE_GRAPH_DUMP_DIR", dir.c_str(), 1), 0);
  Fixture fx;  // graph_dump_dir empty
  unsetenv("ENCORE_GRAPH_DUMP_DIR");
  auto m = fx.manager->Register(Affine("decode", WarmupZero()));
  ASSERT_TRUE(m.ok());
  fx.RunAndCheck(*m);
  EXPECT_TRUE(fs::exists(dir + "/decode.dev" + std::to_string(CurrentDevice()) + ".graph1.dot"));
}

TEST(ObservabilityGpuTest, WithoutADumpDirectoryNothingIsDumped) {
  ENCORE_REQUIRE_GPU();
  unsetenv("ENCORE_GRAPH_DUMP_DIR");
  Fixture fx;
  auto m = fx.manager->Register(Affine("forward", WarmupZero()));
  ASSERT_TRUE(m.ok());
  fx.RunAndCheck(*m);
  EXPECT_EQ(fx.logs.Count("graph_dumped"), 0);
  EXPECT_EQ(fx.logs.Count("graph_dump_failed"), 0);
}

TEST(ObservabilityGpuTest, CaptureTimesAreReportedAndInTheJson) {
  ENCORE_REQUIRE_GPU();
  Fixture fx;
  MethodFlags f = WarmupZero();
  f.on_new_shape = ShapePolicy::kRecapture;
  auto m = fx.manager->Register(Affine("forward", f));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->Report().capture_us, 0);
  EXPECT_EQ((*m)->Report().last_capture_us, 0);
  fx.RunAndCheck(*m);
  MethodReport r1 = (*m)->Report();
  EXPECT_EQ(r1.captures, 1);
  EXPECT_GT(r1.capture_us, 0);
  EXPECT_EQ(r1.last_capture_us, r1.capture_us);
  fx.RunAndCheck(*m);  // a replay adds nothing
  EXPECT_EQ((*m)->Report().capture_us, r1.capture_us);
  // A new shape recaptures: the total grows by the last one.
  DeviceBuffer<float> in(8), out(8);
  in.Upload(std::vector<float>(8, 1.0f));
  TensorRef i = F32(in.get(), {8}), o = F32(out.get(), {8});
  ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok());
  ASSERT_EQ(cudaStreamSynchronize(fx.stream), cudaSuccess);
  EXPECT_EQ(out.Download()[7], 3.0f);
  MethodReport r2 = (*m)->Report();
  EXPECT_EQ(r2.recaptures, 1);
  EXPECT_GT(r2.last_capture_us, 0);
  EXPECT_EQ(r2.capture_us, r1.capture_us + r2.last_capture_us);
  const std::string j = fx.manager->ReportJson();
  EXPECT_NE(j.find("\"capture_us\":" + std::to_string(r2.capture_us)), std::string::npos) << j;
  EXPECT_NE(j.find("\"last_capture_us\":" + std::to_string(r2.last_capture_us)), std::string::npos) << j;
}

TEST(ObservabilityGpuTest, RefusalsNameTheRemedyAndAreLoggedOncePerInterval) {
  ENCORE_REQUIRE_GPU();
  Fixture fx;
  auto m = fx.manager->Register(Affine("forward", WarmupZero()));
  ASSERT_TRUE(m.ok());
  fx.RunAndCheck(*m);
  DeviceBuffer<float> in(16), out(16);
  TensorRef i = F32(in.get(), {4, 4}), o = F32(out.get(), {4, 4});
  constexpr int kCalls = 2000;  // well under a second
  for (int k = 0; k < kCalls; ++k) {
    Status s = (*m)->Run({&i, 1}, {&o, 1}, fx.stream);
    ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
    if (k == 0) {
      EXPECT_EQ(s.message(),
                "method 'forward': input 0 has size 4 in dim 0, captured with 2; set on_new_shape=recapture|eager|pad "
                "for 'forward', or call Release()");
    }
  }
  EXPECT_EQ((*m)->Report().refusals, kCalls);
  const int lines = fx.logs.Count("refused");
  EXPECT_GE(lines, 1);
  EXPECT_LE(lines, 3) << "refusals are rate-limited to one line a second";
  EXPECT_EQ(fx.logs.Find("refused")->field("suppressed"), "0");
  // The Manager's end logs how many were never logged.
  fx.manager.reset();
  auto rest = fx.logs.Find("refused_not_logged");
  ASSERT_TRUE(rest.has_value());
  int64_t suppressed = 0;
  for (const auto& e : fx.logs.Named("refused")) suppressed += std::stoll(e.field("suppressed"));
  EXPECT_EQ(suppressed + std::stoll(rest->field("count")) + lines, kCalls);
}

// The owners a method holds (events, streams, graphs, the arena) log a
// failed destroy from their destructors; those lines go to the
// application's logger, naming the method, not to the default "encore" one.
TEST(ObservabilityGpuTest, OwnersDestroyFailuresGoToTheApplicationsLogger) {
  ENCORE_REQUIRE_GPU();
  LogCapture default_logger(DefaultLogger());
  Fixture fx;
  auto m = fx.manager->Register(Affine("forward", WarmupZero()));
  ASSERT_TRUE(m.ok());
  fx.RunAndCheck(*m);
  {
    CudaFaultInjector faults;
    // The first event and graph-exec destroys and every cudaFree and unmap
    // fail (the handles and memory leak, which a test can afford).
    faults.FailNth(CudaCall::kEventDestroy, 1, cudaErrorInvalidResourceHandle);
    faults.FailNth(CudaCall::kGraphExecDestroy, 1, cudaErrorInvalidResourceHandle);
    faults.FailNth(CudaCall::kFree, 1, cudaErrorInvalidValue, /*times=*/1000);
    faults.FailNth(CudaCall::kDriverMemUnmap, 1, cudaErrorInvalidValue, /*times=*/1000);
    fx.manager.reset();
  }
  auto destroyed = fx.logs.Named("destroy_failed");
  ASSERT_GE(destroyed.size(), 2u) << "an event and a graph_exec";
  for (const auto& e : destroyed) EXPECT_EQ(e.field("method"), "forward") << e.line;
  auto freed = fx.logs.Find("free_failed", "what", "graph_arena");
  ASSERT_TRUE(freed.has_value());
  EXPECT_EQ(freed->field("method"), "forward");
  EXPECT_EQ(default_logger.Count("destroy_failed"), 0);
  EXPECT_EQ(default_logger.Count("free_failed"), 0);
}

}  // namespace
}  // namespace encore
