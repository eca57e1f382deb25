// SPDX-License-Identifier: Apache-2.0
// Graph dump file names: inside the dump directory whatever the method is
// called, and never the same file for two names. CPU only: the DOT writer
// itself is checked by ObservabilityGpuTest.
#include "encore/graph/capture/internal/graph_dump.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/log.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

TEST(SafeFileStemTest, KeepsPlainNamesAndEscapesTheRest) {
  EXPECT_EQ(SafeFileStem("forward"), "forward");
  EXPECT_EQ(SafeFileStem("decode_step-2"), "decode_step-2");
  EXPECT_EQ(SafeFileStem("a/b"), "a%2Fb");
  EXPECT_EQ(SafeFileStem("../../x"), "%2E%2E%2F%2E%2E%2Fx");
  EXPECT_EQ(SafeFileStem("a%2Fb"), "a%252Fb");  // '%' itself is escaped
  EXPECT_EQ(SafeFileStem(std::string("n\0l", 3)), "n%00l");
  EXPECT_EQ(SafeFileStem("\xc3\xa9"), "%C3%A9");
}

TEST(SafeFileStemTest, NeverLeavesTheDirectoryAndNeverCollides) {
  const std::vector<std::string> names = {"a/b",  "a_b", "a%2Fb", "a.b",     "a:b",     "..",     ".",
                                          "../../x", "x",   "%2E",   "a b",     "a\\b",    "A/B",    "a~b",
                                          std::string(300, 'q'), std::string(301, 'q'), std::string(200, '/'),
                                          std::string(139, 'q') + "/", std::string(138, 'q') + "//"};
  std::set<std::string> stems;
  for (const std::string& n : names) {
    const std::string stem = SafeFileStem(n);
    EXPECT_EQ(stem.find('/'), std::string::npos) << n;
    EXPECT_EQ(stem.find('.'), std::string::npos) << n;
    EXPECT_LE(stem.size(), 160u) << n;
    EXPECT_FALSE(stem.empty()) << n;
    stems.insert(stem);
    const std::filesystem::path p = GraphDumpPath("/tmp/dumps", n, 0, 1);
    EXPECT_EQ(p.parent_path(), "/tmp/dumps") << n;
  }
  EXPECT_EQ(stems.size(), names.size());
}

TEST(GraphDumpPathTest, MethodDeviceAndGraphNumber) {
  EXPECT_EQ(GraphDumpPath("/d", "forward", 1, 3), "/d/forward.dev1.graph3.dot");
  EXPECT_EQ(GraphDumpPath("/d/", "a/b", 0, 12), "/d/a%2Fb.dev0.graph12.dot");
}

// The dump goes through the fault seam: a failing debug print is a warning
// naming the path, never an error of the capture.
TEST(GraphDumpTest, AFailedDumpIsAWarningWithThePath) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/graph_dump_test";
  CudaFaultInjector faults;
  faults.FailNth(CudaCall::kGraphDebugDotPrint, 1, cudaErrorInvalidValue);
  LogCapture logs;
  EventLog log(logs.logger(), LogFormat::kKeyValue);
  DumpCapturedGraph(log, dir, "../x", 0, 1, nullptr);
  auto w = logs.Find("graph_dump_failed");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->level, spdlog::level::warn);
  EXPECT_EQ(w->field("path"), dir + "/%2E%2E%2Fx.dev0.graph1.dot");
  EXPECT_NE(w->field("error").find("cudaGraphDebugDotPrint"), std::string::npos) << w->field("error");
  EXPECT_TRUE(std::filesystem::is_directory(dir));  // made, even though the print failed
  EXPECT_EQ(logs.Count("graph_dumped"), 0);
}

}  // namespace
}  // namespace encore
