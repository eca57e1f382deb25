// SPDX-License-Identifier: Apache-2.0
// What goes wrong inside a conditional's capture: a body that fails, fails
// deep in a nest, breaks its own capture or issues work on the wrong stream,
// and every CUDA call of a capture failing once through the fault seam.
// Each returns a Status; nothing is left capturing, the outer capture can be
// ended and discarded, and the stream captures and runs again afterwards.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/graph/control/internal/control_gpu_fixture.h"

namespace encore {
namespace {

using testing::CaptureFn;
using testing::LaunchCount;
using testing::LaunchLoopInit;

constexpr int kCount = 0, kN = 2, kLeft = 3, kInner = 4;

class ConditionalErrorsGpuTest : public testing::ControlGpuTest {
 protected:
  // The stream captures and replays an If correctly.
  void ExpectStreamWorks() {
    ExpectNothingCapturing();
    auto c = Capture([&](ConditionalCapture& cc, cudaStream_t st) { return cc.AddIf(st, Flag(5), CountBody(6)); });
    ASSERT_TRUE(c.ok()) << c.status();
    SetInt(6, 0);
    SetFlag(5, true);
    ASSERT_TRUE(Run(*c).ok());
    EXPECT_EQ(GetInt(6), 1);
  }
};

TEST_F(ConditionalErrorsGpuTest, AFailingBodyReturnsItsStatusAndTheOuterCaptureCanBeEnded) {
  auto capture = StreamCapture::Begin(s());
  ASSERT_TRUE(capture.ok()) << capture.status();
  ConditionalCapture cc(Resources());
  Status st = cc.AddIf(s(), Flag(0), [&](cudaStream_t bs) -> Status {
    CTL_LAUNCH(LaunchCount(Int(kCount), bs));
    return InternalError("boom");
  });
  EXPECT_EQ(st, InternalError("boom"));
  EXPECT_EQ(cc.depth(), 0);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaStreamIsCapturing(s(), &cs), cudaSuccess);
  EXPECT_EQ(cs, cudaStreamCaptureStatusActive) << "the outer capture goes on until its owner ends it";
  bool capture_error = false;
  StatusOr<Graph> g = capture->End(&capture_error);  // ok or not: either way it is discarded
  (void)g;
  ExpectStreamWorks();
}

TEST_F(ConditionalErrorsGpuTest, AFailureThreeDeepUnwindsEveryBodyCapture) {
  auto c = Capture([&](ConditionalCapture& cc, cudaStream_t st) {
    return cc.AddIf(st, Flag(0), [&](cudaStream_t b1) {
      return cc.AddWhile(b1, Flag(1), [&](cudaStream_t b2) {
        return cc.AddIf(b2, Flag(2), [&](cudaStream_t) { return FailedPreconditionError("deep"); });
      }, 10, 1);
    });
  });
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status(), FailedPreconditionError("deep"));
  ExpectStreamWorks();
}

TEST_F(ConditionalErrorsGpuTest, ABodyThatBreaksItsOwnCaptureGetsAnError) {
  auto c = Capture([&](ConditionalCapture& cc, cudaStream_t st) {
    return cc.AddIf(st, Flag(0), [&](cudaStream_t bs) {
      (void)cudaStreamSynchronize(bs);  // not allowed in a capture: invalidates it
      return OkStatus();
    });
  });
  ASSERT_FALSE(c.ok());
  (void)cudaGetLastError();
  ExpectStreamWorks();
}

TEST_F(ConditionalErrorsGpuTest, ABodyIssuingWorkOnTheEnclosingStreamIsRefused) {
  auto c = Capture([&](ConditionalCapture& cc, cudaStream_t st) {
    return cc.AddIf(st, Flag(0), [&](cudaStream_t) { return testing::LaunchOk(LaunchCount(Int(kCount), st), "x"); });
  });
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("enclosing stream"), std::string_view::npos) << c.status();
  ExpectStreamWorks();
}

TEST_F(ConditionalErrorsGpuTest, AddOutsideACaptureIsAFailedPrecondition) {
  ConditionalCapture cc(Resources());
  Status st = cc.AddIf(s(), Flag(0), CountBody(kCount));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("not being captured"), std::string_view::npos) << st;
  ExpectNothingCapturing();
}

// While(n) { count; If(flag) { count inner } }, captured, instantiated and
// launched; "" when the results are right, else what is wrong.
class FaultGpuTest : public ConditionalErrorsGpuTest {
 protected:
  CaptureFn LoopWithIf() {
    return [&](ConditionalCapture& cc, cudaStream_t st) -> Status {
      CTL_LAUNCH(LaunchLoopInit(Int(kN), Int(kLeft), Flag(0), st));
      return cc.AddWhile(st, Flag(0), [&](cudaStream_t bs) -> Status {
        CTL_LAUNCH(LaunchCount(Int(kCount), bs));
        ENCORE_RETURN_IF_ERROR(cc.AddIf(bs, Flag(1), CountBody(kInner)));
        CTL_LAUNCH(testing::LaunchLoopStep(Int(kLeft), Flag(0), bs));
        return OkStatus();
      }, 100, 7);
    };
  }
  StatusOr<testing::Captured> CaptureLoop() { return Capture(LoopWithIf()); }
  void ExpectLoopResults(const testing::Captured& c, const std::string& cell) {
    ZeroInts();
    SetInt(kN, 4);
    SetFlag(1, true);
    ASSERT_TRUE(Run(c).ok()) << cell;
    EXPECT_EQ(GetInt(kCount), 4) << cell;
    EXPECT_EQ(GetInt(kInner), 4) << cell;
  }
};

// Every call the capture makes through the fault seam, failed once at each
// of its occurrences: a Status, no crash, no capture left open, and the
// stream still captures a correct graph afterwards.
TEST_F(FaultGpuTest, EveryCudaCallOfACaptureFailingOnceGivesAStatusAndLeaksNoCapture) {
  std::vector<int> counts(static_cast<int>(CudaCall::kCount));
  {
    CudaFaultInjector counter;
    auto c = CaptureLoop();
    ASSERT_TRUE(c.ok()) << c.status();
    for (int i = 0; i < static_cast<int>(CudaCall::kCount); ++i) counts[i] = counter.Count(static_cast<CudaCall>(i));
    ExpectLoopResults(*c, "no fault");
  }
  for (CudaCall call : {CudaCall::kStreamGetCaptureGraph, CudaCall::kGraphConditionalHandleCreate,
                        CudaCall::kGraphAddNode, CudaCall::kStreamUpdateCaptureDependencies,
                        CudaCall::kStreamBeginCaptureToGraph, CudaCall::kStreamEndCapture,
                        CudaCall::kGetLastError}) {
    EXPECT_GT(counts[static_cast<int>(call)], 0) << CudaCallName(call) << " is never called by the capture";
  }
  int cells = 0;
  for (int i = 0; i < static_cast<int>(CudaCall::kCount); ++i) {
    const CudaCall call = static_cast<CudaCall>(i);
    for (int nth = 1; nth <= counts[i]; ++nth) {
      const std::string cell = std::string(CudaCallName(call)) + " #" + std::to_string(nth);
      counters_.Release();  // the graphs of earlier cells are gone
      StatusOr<testing::Captured> c = Status(InternalError("not run"));
      {
        CudaFaultInjector inj;
        inj.FailNth(call, nth, cudaErrorMemoryAllocation);
        c = CaptureLoop();
        EXPECT_EQ(inj.Failed(call), 1) << cell;
      }
      (void)cudaGetLastError();
      ExpectNothingCapturing();
      if (c.ok()) {
        ExpectLoopResults(*c, cell + " (the capture absorbed the failure)");
      } else {
        EXPECT_NE(c.status().code(), StatusCode::kOk) << cell;
      }
      ++cells;
      auto again = CaptureLoop();
      ASSERT_TRUE(again.ok()) << cell << ": " << again.status();
      ExpectLoopResults(*again, cell + ", then a clean capture");
    }
  }
  EXPECT_GT(cells, 10);
  std::printf("fault cells: %d\n", cells);
}

}  // namespace
}  // namespace encore
