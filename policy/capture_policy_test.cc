// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/capture_policy.h"

#include <gtest/gtest.h>

namespace encore {
namespace {

TEST(DecideTest, PhasesInOrder) {
  MethodFlags f;  // warmup 3
  DecisionInput in{&f, false, 0, false, false};
  EXPECT_EQ(Decide(in), Action::kWarmup);
  in.warmups_done = 2;
  EXPECT_EQ(Decide(in), Action::kWarmup);
  in.warmups_done = 3;
  EXPECT_EQ(Decide(in), Action::kCapture);
  in.has_graph = true;
  in.matching_graph = true;
  EXPECT_EQ(Decide(in), Action::kReplay);
}

TEST(DecideTest, ZeroWarmupCapturesFirst) {
  MethodFlags f;
  f.warmup_calls = 0;
  EXPECT_EQ(Decide({&f, false, 0, false, false}), Action::kCapture);
}

TEST(DecideTest, GraphsOffWins) {
  MethodFlags f;
  EXPECT_EQ(Decide({&f, true, 5, true, true}), Action::kEager);
  f.graphs = false;
  EXPECT_EQ(Decide({&f, false, 5, true, true}), Action::kEager);
}

TEST(DecideTest, NewShapeFollowsPolicy) {
  MethodFlags f;
  DecisionInput in{&f, false, 3, true, false};
  EXPECT_EQ(Decide(in), Action::kRefuse);
  f.on_new_shape = ShapePolicy::kEager;
  EXPECT_EQ(Decide(in), Action::kEagerOnce);
  f.on_new_shape = ShapePolicy::kRecapture;
  EXPECT_EQ(Decide(in), Action::kRecapture);
  // Under pad a bucket without a graph gets one; the others stay kept.
  f.on_new_shape = ShapePolicy::kPad;
  EXPECT_EQ(Decide(in), Action::kCapture);
}

TEST(DecideTest, APaddedBatchNoBucketHoldsRunsEagerlyAfterTheWarmups) {
  MethodFlags f;
  f.on_new_shape = ShapePolicy::kPad;
  f.warmup_calls = 1;
  DecisionInput in{&f, false, 0, false, false, /*padded=*/true, /*has_bucket=*/false};
  EXPECT_EQ(Decide(in), Action::kWarmup);
  in.warmups_done = 1;
  EXPECT_EQ(Decide(in), Action::kEagerOnce);
  in.has_graph = in.matching_graph = true;
  EXPECT_EQ(Decide(in), Action::kEagerOnce);
  in.has_bucket = true;
  EXPECT_EQ(Decide(in), Action::kReplay);
}

// Never slower than eager: a call its bucket would pad too much runs
// eagerly whether or not the bucket has a graph (none is captured for it),
// after the warmups.
TEST(DecideTest, APaddedCallThatPadsTooMuchRunsEagerly) {
  MethodFlags f;
  f.on_new_shape = ShapePolicy::kPad;
  f.warmup_calls = 1;
  DecisionInput in{&f, false, 0, false, false, /*padded=*/true, /*has_bucket=*/true};
  in.pad_eager = true;
  EXPECT_EQ(Decide(in), Action::kWarmup);
  in.warmups_done = 1;
  EXPECT_EQ(Decide(in), Action::kEagerOnce);  // no capture for it
  in.has_graph = in.matching_graph = true;
  EXPECT_EQ(Decide(in), Action::kEagerOnce);  // no replay either
  in.pad_eager = false;
  EXPECT_EQ(Decide(in), Action::kReplay);
  in.graphs_off = true;
  in.pad_eager = true;
  EXPECT_EQ(Decide(in), Action::kEager);  // graphs off says why first
}

// capture=background: a signature whose graph is being made runs eagerly
// (its warmups are done), one whose graph is ready launches it first; a
// pending graph of another signature is a graph the method has.
TEST(DecideTest, BackgroundCapturesRunEagerlyUntilReady) {
  MethodFlags f;
  f.warmup_calls = 1;
  f.capture_mode = CaptureMode::kBackground;
  DecisionInput in{&f, false, 0, false, false};
  in.capture_pending = true;
  EXPECT_EQ(Decide(in), Action::kWarmup);
  in.warmups_done = 1;
  in.has_graph = true;
  EXPECT_EQ(Decide(in), Action::kCapturing);
  in.capture_pending = false;
  in.capture_ready = true;
  EXPECT_EQ(Decide(in), Action::kFirstLaunch);
  in.capture_ready = false;
  EXPECT_EQ(Decide(in), Action::kRefuse);  // another signature's graph is pending: refuse
  in.graphs_off = true;
  in.capture_ready = true;
  EXPECT_EQ(Decide(in), Action::kEager);
  // A padded call that pads too much runs eagerly whatever its graph's state.
  f.on_new_shape = ShapePolicy::kPad;
  in.graphs_off = false;
  in.padded = true;
  in.pad_eager = true;
  EXPECT_EQ(Decide(in), Action::kEagerOnce);
}

TEST(DecideTest, PrecaptureSkipsWhatACallWouldNotCapture) {
  MethodFlags f;
  f.warmup_calls = 0;
  DecisionInput in{&f, false, 0, true, true};
  in.precapture = true;
  EXPECT_EQ(Decide(in), Action::kSkip);  // already captured
  in.matching_graph = false;
  f.on_new_shape = ShapePolicy::kEager;
  EXPECT_EQ(Decide(in), Action::kSkip);  // eager keeps its graph and adds none
  f.on_new_shape = ShapePolicy::kRefuse;
  EXPECT_EQ(Decide(in), Action::kRefuse);
  f.on_new_shape = ShapePolicy::kRecapture;
  EXPECT_EQ(Decide(in), Action::kRecapture);
  in.graphs_off = true;
  EXPECT_EQ(Decide(in), Action::kSkip);
  in.precapture = false;
  EXPECT_EQ(Decide(in), Action::kEager);
}

TEST(ClassifyTest, RefusalsAndCudaCaptureErrorsAreExpected) {
  CaptureFailure r = ClassifyCaptureFailure(CaptureStep::kMethod, CaptureRefusal("ReadScalar"), false, false);
  EXPECT_TRUE(r.expected);
  EXPECT_TRUE(r.retry_eagerly);
  EXPECT_EQ(r.reason, "method: ReadScalar");
  CaptureFailure c = ClassifyCaptureFailure(CaptureStep::kEndCapture,
                                            FailedPreconditionError("cudaStreamEndCapture: invalidated"), true, false);
  EXPECT_TRUE(c.expected);
  CaptureFailure oom =
      ClassifyCaptureFailure(CaptureStep::kInstantiate, ResourceExhaustedError("oom"), false, false);
  EXPECT_FALSE(oom.expected);
  EXPECT_TRUE(oom.retry_eagerly);
  EXPECT_EQ(oom.reason, "instantiate: oom");
  CaptureFailure ran = ClassifyCaptureFailure(CaptureStep::kFirstLaunch, InternalError("x"), false, true);
  EXPECT_FALSE(ran.retry_eagerly);
}

}  // namespace
}  // namespace encore
