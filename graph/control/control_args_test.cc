// SPDX-License-Identifier: Apache-2.0
// Argument checks of If and While, graph or eager, that must hold on any
// machine and make no CUDA call; the runaway message; the resources made
// before a capture refusing inside one.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/scoped_thread_capture.h"
#include "encore/graph/control/internal/body_stream_pool.h"
#include "encore/graph/control/internal/conditional_capture.h"
#include "encore/graph/control/internal/eager_control.h"
#include "encore/graph/control/internal/graph_walk.h"
#include "encore/graph/control/internal/loop_counters.h"
#include "encore/graph/control/internal/loop_record.h"

namespace encore {
namespace {

const bool* const kSomeFlag = reinterpret_cast<const bool*>(0x1000);
cudaStream_t const kSomeStream = reinterpret_cast<cudaStream_t>(0x2000);
BodyFn Nothing() {
  return [](cudaStream_t) { return OkStatus(); };
}

// No CUDA call was made through the seam.
void ExpectNoCalls(const CudaFaultInjector& inj) {
  for (int c = 0; c < static_cast<int>(CudaCall::kCount); ++c) {
    EXPECT_EQ(inj.Count(static_cast<CudaCall>(c)), 0) << CudaCallName(static_cast<CudaCall>(c));
  }
}

TEST(ControlArgsTest, MaxIterationsBelowOneIsInvalidWithoutACudaCall) {
  BodyStreamPool pool;
  ConditionalCapture cc({&pool});
  CudaFaultInjector inj;
  for (int64_t bad : {0, -1, -1000}) {
    Status st = cc.AddWhile(kSomeStream, kSomeFlag, Nothing(), bad, 1);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_EQ(st.message(), "While: max_iterations is " + std::to_string(bad) + "; it must be at least 1");
    StatusOr<EagerLoopResult> r = RunEagerWhile(kSomeFlag, kSomeStream, Nothing(), bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), st.message());
  }
  ExpectNoCalls(inj);
}

TEST(ControlArgsTest, NullConditionsAndEmptyBodiesAreInvalid) {
  BodyStreamPool pool;
  ConditionalCapture cc({&pool});
  CudaFaultInjector inj;
  EXPECT_EQ(cc.AddIf(kSomeStream, nullptr, Nothing()), InvalidArgumentError("If: the condition pointer is null"));
  EXPECT_EQ(cc.AddIf(kSomeStream, kSomeFlag, BodyFn()), InvalidArgumentError("If: the body function is empty"));
  EXPECT_EQ(cc.AddWhile(kSomeStream, nullptr, Nothing(), 4, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cc.AddWhile(kSomeStream, kSomeFlag, BodyFn(), 4, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadFlag(nullptr, kSomeStream).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RunEagerIf(kSomeFlag, kSomeStream, BodyFn()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RunEagerWhile(kSomeFlag, kSomeStream, BodyFn(), 3).status().code(), StatusCode::kInvalidArgument);
  ExpectNoCalls(inj);
  EXPECT_EQ(cc.conditionals(), 0);
}

TEST(ControlArgsTest, MissingResourcesAreAFailedPrecondition) {
  ConditionalCapture none({});
  CudaFaultInjector inj;
  Status st = none.AddIf(kSomeStream, kSomeFlag, Nothing());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("no body streams"), std::string_view::npos) << st;
  st = none.AddWhile(kSomeStream, kSomeFlag, Nothing(), 8, 0);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("loop record"), std::string_view::npos) << st;
  BodyStreamPool empty;
  ConditionalCapture no_levels({&empty});
  st = no_levels.AddIf(kSomeStream, kSomeFlag, Nothing());
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st;
  EXPECT_NE(st.message().find("(0 levels)"), std::string_view::npos) << st;
  ExpectNoCalls(inj);
}

TEST(ControlArgsTest, ReadFlagRefusesOnACapturingThreadWithoutACudaCall) {
  ScopedThreadCapture capturing;
  CudaFaultInjector inj;
  StatusOr<bool> v = ReadFlag(kSomeFlag, kSomeStream);
  EXPECT_TRUE(IsCaptureRefusal(v.status())) << v.status();
  StatusOr<EagerLoopResult> r = RunEagerWhile(kSomeFlag, kSomeStream, Nothing(), 3);
  EXPECT_TRUE(IsCaptureRefusal(r.status())) << r.status();
  ExpectNoCalls(inj);
}

TEST(ControlArgsTest, BodyStreamsAreNotMadeInsideACapture) {
  BodyStreamPool pool;
  EXPECT_EQ(pool.Prepare(0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(pool.Prepare(65).code(), StatusCode::kInvalidArgument);
  ScopedThreadCapture capturing;
  CudaFaultInjector inj;
  Status st = pool.Prepare(4);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_EQ(pool.depth(), 0);
  ExpectNoCalls(inj);
}

TEST(ControlArgsTest, LoopCountersNeedACapacityAndRefuseWhenUnprepared) {
  EXPECT_EQ(LoopCounters::Create(0).status().code(), StatusCode::kInvalidArgument);
  LoopCounters none;
  EXPECT_EQ(none.Claim().status().code(), StatusCode::kFailedPrecondition);
}

TEST(ControlArgsTest, TheRunawayMessageNamesMethodBoundAndCall) {
  EXPECT_EQ(LoopRunawayMessage("decode", 64, 12),
            "method 'decode': a While loop reached its bound of 64 iterations with its condition still true (call 12)");
  Status st = LoopRunawayError("cg", 1000, -1);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "method 'cg': a While loop reached its bound of 1000 iterations with its condition still true (call "
            "unknown)");
}

TEST(ControlArgsTest, AnEmptyLoopRecordHasNothingPending) {
  LoopRecord record;
  EXPECT_FALSE(record.pending());
  EXPECT_FALSE(record.Take().has_value());
  EXPECT_EQ(record.device(), nullptr);
  record.Clear();
}

TEST(ControlArgsTest, ConditionalBodiesFindWhatWasAdded) {
  ConditionalBodies bodies;
  auto node = reinterpret_cast<cudaGraphNode_t>(0x10);
  auto g1 = reinterpret_cast<cudaGraph_t>(0x20), g2 = reinterpret_cast<cudaGraph_t>(0x30);
  EXPECT_EQ(bodies.Find(node), nullptr);
  bodies.Add(node, g1);
  bodies.Add(node, g2);
  ASSERT_NE(bodies.Find(node), nullptr);
  EXPECT_EQ(*bodies.Find(node), (std::vector<cudaGraph_t>{g1, g2}));
  EXPECT_EQ(bodies.size(), 1u);
  EXPECT_EQ(ForEachNodeRecursive(nullptr, [](cudaGraphNode_t, cudaGraphNodeType, int) { return OkStatus(); })
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace encore
