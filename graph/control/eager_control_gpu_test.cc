// SPDX-License-Identifier: Apache-2.0
// The eager If and While (a host read of the flag per test) against the
// conditional nodes: the same counts for the same device flags, the same
// bound, and a flag read that refuses inside a capture without breaking it.
#include "encore/graph/control/internal/eager_control.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "encore/core/internal/device_memory.h"
#include "encore/graph/control/internal/control_gpu_fixture.h"

namespace encore {
namespace {

using testing::LaunchLoopInit;

constexpr int kCount = 0, kN = 2, kLeft = 3;

class EagerControlGpuTest : public testing::ControlGpuTest {};

TEST_F(EagerControlGpuTest, EagerWhileAgreesWithTheWhileNode) {
  auto graph = Capture([&](ConditionalCapture& cc, cudaStream_t st) -> Status {
    CTL_LAUNCH(LaunchLoopInit(Int(kN), Int(kLeft), Flag(0), st));
    return cc.AddWhile(st, Flag(0), CountdownBody(kCount, kLeft, 0), 1000, 1);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (int n : {0, 1, 3, 7, 64}) {
    ZeroInts();
    SetInt(kN, n);
    ASSERT_TRUE(Run(*graph).ok());
    const int from_graph = GetInt(kCount);
    ZeroInts();
    SetInt(kN, n);
    ASSERT_EQ(LaunchLoopInit(Int(kN), Int(kLeft), Flag(0), s()), cudaSuccess);
    StatusOr<EagerLoopResult> r = RunEagerWhile(Flag(0), s(), CountdownBody(kCount, kLeft, 0), 1000);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->iterations, n);
    EXPECT_FALSE(r->reached_bound);
    EXPECT_EQ(GetInt(kCount), n);
    EXPECT_EQ(from_graph, n);
  }
}

TEST_F(EagerControlGpuTest, EagerWhileStopsAtTheSameBoundAsTheWhileNode) {
  auto graph = Capture([&](ConditionalCapture& cc, cudaStream_t st) {
    return cc.AddWhile(st, Flag(0), CountBody(kCount), 5, 3);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  SetFlag(0, true);
  ASSERT_TRUE(Run(*graph).ok());
  EXPECT_EQ(GetInt(kCount), 5);
  std::optional<LoopRecord::Runaway> rec = record_.Take();
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->bound, 5);
  ZeroInts();
  StatusOr<EagerLoopResult> r = RunEagerWhile(Flag(0), s(), CountBody(kCount), 5);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->iterations, 5);
  EXPECT_TRUE(r->reached_bound);
  EXPECT_EQ(GetInt(kCount), 5);
}

TEST_F(EagerControlGpuTest, EagerIfAgreesWithTheIfNode) {
  auto graph = Capture([&](ConditionalCapture& cc, cudaStream_t st) { return cc.AddIf(st, Flag(0), CountBody(kCount)); });
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto pinned = PinnedHostMemory::Allocate(1);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  for (bool flag : {true, false, true}) {
    ZeroInts();
    SetFlag(0, flag);
    ASSERT_TRUE(Run(*graph).ok());
    const int from_graph = GetInt(kCount);
    ZeroInts();
    StatusOr<bool> taken = RunEagerIf(Flag(0), s(), CountBody(kCount), pinned->as<bool>());
    ASSERT_TRUE(taken.ok()) << taken.status();
    EXPECT_EQ(*taken, flag);
    EXPECT_EQ(GetInt(kCount), from_graph);
    EXPECT_EQ(from_graph, flag ? 1 : 0);
  }
}

TEST_F(EagerControlGpuTest, ReadFlagSeesEarlierWorkOnTheStream) {
  ASSERT_EQ(testing::LaunchSetFlag(Flag(2), true, s()), cudaSuccess);
  StatusOr<bool> v = ReadFlag(Flag(2), s());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(*v);
  ASSERT_EQ(testing::LaunchSetFlag(Flag(2), false, s()), cudaSuccess);
  v = ReadFlag(Flag(2), s());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(*v);
}

TEST_F(EagerControlGpuTest, ReadFlagInsideACaptureRefusesAndLeavesTheCaptureIntact) {
  auto capture = StreamCapture::Begin(s());
  ASSERT_TRUE(capture.ok()) << capture.status();
  StatusOr<bool> v = ReadFlag(Flag(0), s());
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(IsCaptureRefusal(v.status())) << v.status();
  ASSERT_EQ(testing::LaunchCount(Int(kCount), s()), cudaSuccess);
  bool capture_error = false;
  StatusOr<Graph> g = capture->End(&capture_error);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g->NodeCount(), 1u);
}

}  // namespace
}  // namespace encore
