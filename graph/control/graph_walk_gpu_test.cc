// SPDX-License-Identifier: Apache-2.0
// The walk into conditional bodies, and what CUDA allows on graphs that hold
// conditional nodes, as the binding scan and recapture need to know: a
// kernel node inside a WHILE body rewritten in the executable with no new
// instantiation (must work), and probes that print what this driver does
// with cudaGraphClone + cudaGraphNodeFindInClone, a second instantiation of
// one graph and cudaGraphExecUpdate from a recaptured graph (documented as
// unsupported or restricted; each fails only if CUDA accepts the call and
// then computes a wrong result).
#include "encore/graph/control/internal/graph_walk.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <vector>

#include "encore/graph/control/internal/control_gpu_fixture.h"

namespace encore {
namespace {

using testing::LaunchLoopInit;

constexpr int kA = 0, kB = 1, kN = 2, kLeft = 3, kIfCount = 4, kInner = 5;

class GraphWalkGpuTest : public testing::ControlGpuTest {
 protected:
  // If(0) { count 4 }; LoopInit; While(n) { count `target`; If(1) { count
  // 5 }; step }.
  StatusOr<testing::Captured> CaptureShape(int target) {
    return Capture([=, this](ConditionalCapture& cc, cudaStream_t st) -> Status {
      ENCORE_RETURN_IF_ERROR(cc.AddIf(st, Flag(0), CountBody(kIfCount)));
      CTL_LAUNCH(LaunchLoopInit(Int(kN), Int(kLeft), Flag(2), st));
      return cc.AddWhile(st, Flag(2), [&, target](cudaStream_t bs) -> Status {
        CTL_LAUNCH(testing::LaunchCount(Int(target), bs));
        ENCORE_RETURN_IF_ERROR(cc.AddIf(bs, Flag(1), CountBody(kInner)));
        CTL_LAUNCH(testing::LaunchLoopStep(Int(kLeft), Flag(2), bs));
        return OkStatus();
      }, 100, 1);
    });
  }
  // The kernel node, inside a body, whose first argument is `arg`.
  cudaGraphNode_t FindKernelWithFirstArg(const testing::Captured& c, const void* arg, int* depth_out) {
    cudaGraphNode_t found = nullptr;
    Status st = ForEachNodeRecursive(
        c.graph.get(),
        [&](cudaGraphNode_t node, cudaGraphNodeType type, int depth) {
          if (type != cudaGraphNodeTypeKernel || depth == 0) return OkStatus();
          cudaKernelNodeParams p{};
          if (cudaGraphKernelNodeGetParams(node, &p) != cudaSuccess) return InternalError("kernel node params");
          if (p.kernelParams != nullptr && *static_cast<void* const*>(p.kernelParams[0]) == arg) {
            found = node;
            *depth_out = depth;
          }
          return OkStatus();
        },
        &c.bodies);
    EXPECT_TRUE(st.ok()) << st;
    return found;
  }
  void RunShape(const testing::Captured& c, int n) {
    ZeroInts();
    SetInt(kN, n);
    SetFlag(0, true);
    SetFlag(1, true);
    ASSERT_TRUE(Run(c).ok());
  }
};

TEST_F(GraphWalkGpuTest, TheWalkSeesEveryNodeInsideConditionalBodies) {
  auto c = CaptureShape(kA);
  ASSERT_TRUE(c.ok()) << c.status();
  std::map<std::pair<int, int>, int> seen;  // (depth, type) -> nodes
  Status st = ForEachNodeRecursive(
      c->graph.get(),
      [&](cudaGraphNode_t, cudaGraphNodeType type, int depth) {
        ++seen[{depth, static_cast<int>(type)}];
        return OkStatus();
      },
      &c->bodies);
  ASSERT_TRUE(st.ok()) << st;
  const int kKernel = cudaGraphNodeTypeKernel, kCond = cudaGraphNodeTypeConditional;
  // Depth 0: set-if, If, LoopInit, loop entry, While. Depth 1: the If body's
  // count; the While body's count, set-if, step, loop step, and its If.
  // Depth 2: the inner If's count.
  std::map<std::pair<int, int>, int> want = {{{0, kKernel}, 3}, {{0, kCond}, 2}, {{1, kKernel}, 5},
                                             {{1, kCond}, 1},   {{2, kKernel}, 1}};
  EXPECT_EQ(seen, want);
  StatusOr<size_t> n = CountNodesRecursive(c->graph.get(), &c->bodies);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 12u);
  EXPECT_EQ(*c->graph.NodeCount(), 5u) << "cudaGraphGetNodes counts the top level only";

  // Without the recorded bodies only a driver with cuGraphNodeGetParams
  // (CUDA 13.2+) can see inside; otherwise the walk refuses.
  StatusOr<size_t> blind = CountNodesRecursive(c->graph.get(), nullptr);
  std::printf("walk without recorded bodies: %s\n", blind.ok() ? "driver reports them" : blind.status().ToString().c_str());
  if (blind.ok()) {
    EXPECT_EQ(*blind, 12u);
  } else {
    EXPECT_EQ(blind.status().code(), StatusCode::kFailedPrecondition);
  }
}

TEST_F(GraphWalkGpuTest, AKernelNodeInsideAWhileBodyIsRewrittenInTheExecutableWithoutReinstantiation) {
  auto c = CaptureShape(kA);
  ASSERT_TRUE(c.ok()) << c.status();
  int depth = -1;
  cudaGraphNode_t node = FindKernelWithFirstArg(*c, Int(kA), &depth);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(depth, 1);
  RunShape(*c, 3);
  EXPECT_EQ(GetInt(kA), 3);
  cudaKernelNodeParams p{};
  ENCORE_CUDA_ASSERT(cudaGraphKernelNodeGetParams(node, &p));
  for (int* target : {Int(kB), Int(kA), Int(kB)}) {
    void* args[] = {&target};
    cudaKernelNodeParams q = p;
    q.kernelParams = args;
    q.extra = nullptr;
    ENCORE_CUDA_ASSERT(cudaGraphExecKernelNodeSetParams(c->exec.get(), node, &q));
    RunShape(*c, 7);
    EXPECT_EQ(GetInt(kA), target == Int(kA) ? 7 : 0);
    EXPECT_EQ(GetInt(kB), target == Int(kB) ? 7 : 0);
    EXPECT_EQ(GetInt(kInner), 7);
  }
}

TEST_F(GraphWalkGpuTest, ProbeCloneAndFindInCloneOfAGraphWithConditionalNodes) {
  auto c = CaptureShape(kA);
  ASSERT_TRUE(c.ok()) << c.status();
  int depth = -1;
  cudaGraphNode_t body_node = FindKernelWithFirstArg(*c, Int(kA), &depth);
  ASSERT_NE(body_node, nullptr);
  cudaGraph_t clone = nullptr;
  cudaError_t err = cudaGraphClone(&clone, c->graph.get());
  std::printf("cudaGraphClone of a graph with conditional nodes: %s\n", cudaGetErrorName(err));
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    RunShape(*c, 2);
    EXPECT_EQ(GetInt(kA), 2) << "the original still runs";
    return;
  }
  Graph owned(clone);
  cudaGraphNode_t in_clone = nullptr;
  err = cudaGraphNodeFindInClone(&in_clone, body_node, clone);
  std::printf("cudaGraphNodeFindInClone of a WHILE body's kernel node: %s\n", cudaGetErrorName(err));
  EXPECT_EQ(err, cudaSuccess) << "clone accepted, but a node inside a body cannot be found in it";
  EXPECT_NE(in_clone, nullptr);
  EXPECT_NE(in_clone, body_node);
}

TEST_F(GraphWalkGpuTest, ProbeASecondInstantiationOfAGraphWithConditionalNodes) {
  auto c = CaptureShape(kA);
  ASSERT_TRUE(c.ok()) << c.status();
  StatusOr<GraphExec> second = GraphExec::Instantiate(c->graph);
  std::printf("second instantiation while the first lives: %s\n",
              second.ok() ? "accepted" : second.status().ToString().c_str());
  if (!second.ok()) return;
  ZeroInts();
  SetInt(kN, 4);
  SetFlag(0, true);
  SetFlag(1, false);
  ASSERT_TRUE(second->Launch(s()).ok());
  EXPECT_EQ(GetInt(kA), 4);
  EXPECT_EQ(GetInt(kInner), 0);
  RunShape(*c, 5);
  EXPECT_EQ(GetInt(kA), 5);
}

TEST_F(GraphWalkGpuTest, ProbeUpdatingAnExecutableFromARecapturedGraph) {
  auto first = CaptureShape(kA);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = CaptureShape(kB);  // same shape, another buffer, new handles
  ASSERT_TRUE(second.ok()) << second.status();
  Status st = first->exec.Update(second->graph);
  std::printf("cudaGraphExecUpdate from a recaptured graph with conditionals: %s\n", st.ToString().c_str());
  RunShape(*first, 3);
  if (st.ok()) {
    EXPECT_EQ(GetInt(kB), 3);
    EXPECT_EQ(GetInt(kA), 0);
  } else {
    EXPECT_EQ(GetInt(kA), 3) << "a refused update leaves the executable as it was";
  }
  EXPECT_EQ(GetInt(kInner), 3);
}

}  // namespace
}  // namespace encore
