// SPDX-License-Identifier: Apache-2.0
// The fixture of the graph/control GPU tests: a stream, body streams, loop
// counters and a runaway record made before any capture, device ints and
// flags for bodies to count in and loop on, and Capture(), which captures
// the stream with encore's StreamCapture, lets the test add conditionals and
// instantiates the graph with GraphExec.
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_GPU_FIXTURE_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_GPU_FIXTURE_H_

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>

#include "encore/core/cuda_error.h"
#include "encore/core/status.h"
#include "encore/graph/internal/graph.h"
#include "encore/graph/internal/stream_capture.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/process_util.h"
#include "encore/graph/control/internal/control_test_kernels.h"
#include "encore/graph/control/internal/body_stream_pool.h"
#include "encore/graph/control/internal/conditional_capture.h"
#include "encore/graph/control/internal/loop_counters.h"
#include "encore/graph/control/internal/loop_record.h"

namespace encore::testing {

// A kernel launch inside a body, as a Status.
inline Status LaunchOk(cudaError_t err, const char* what) {
  return err == cudaSuccess ? OkStatus() : CudaStatus(err, what);
}
#define CTL_LAUNCH(expr) ENCORE_RETURN_IF_ERROR(::encore::testing::LaunchOk((expr), #expr))

struct Captured {
  Graph graph;
  GraphExec exec;
  ConditionalBodies bodies;
  int max_depth = 0;
  int conditionals = 0;
};

using CaptureFn = std::function<Status(ConditionalCapture& cc, cudaStream_t s)>;

class ControlGpuTest : public GpuStreamTest {
 protected:
  static constexpr int kInts = 32;
  static constexpr int kFlags = 32;

  void SetUp() override {
    GpuStreamTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(pool_.Prepare(8).ok());
    auto counters = LoopCounters::Create(256);
    ASSERT_TRUE(counters.ok()) << counters.status();
    counters_ = std::move(*counters);
    auto record = LoopRecord::Create();
    ASSERT_TRUE(record.ok()) << record.status();
    record_ = std::move(*record);
    ASSERT_TRUE(ints_.ok() && flags_.ok());
    ZeroInts();
    ASSERT_EQ(Fill(flags_.get(), 0, kFlags), cudaSuccess);
  }

  ControlResources Resources() { return {&pool_, &counters_, record_.device()}; }

  // Captures s() around fn; the graph is instantiated unless fn failed.
  StatusOr<Captured> Capture(const CaptureFn& fn, ControlResources res) {
    ENCORE_ASSIGN_OR_RETURN(StreamCapture capture, StreamCapture::Begin(s()));
    ConditionalCapture cc(res);
    if (Status st = fn(cc, s()); !st.ok()) {
      if (cc.body_capture_broken()) capture.EndAndGiveUp();
      return st;
    }
    bool capture_error = false;
    ENCORE_ASSIGN_OR_RETURN(Graph graph, capture.End(&capture_error));
    ENCORE_ASSIGN_OR_RETURN(GraphExec exec, GraphExec::Instantiate(graph));
    return Captured{std::move(graph), std::move(exec), cc.bodies(), cc.max_depth(), cc.conditionals()};
  }
  StatusOr<Captured> Capture(const CaptureFn& fn) { return Capture(fn, Resources()); }

  // One launch, waited for.
  Status Run(const Captured& c) {
    ENCORE_RETURN_IF_ERROR(c.exec.Launch(s()));
    cudaError_t err = cudaStreamSynchronize(s());
    return err == cudaSuccess ? OkStatus() : CudaStatus(err, "cudaStreamSynchronize");
  }

  int* Int(int i) const { return ints_.get() + i; }
  bool* Flag(int i) const { return flags_.as<bool>() + i; }
  void SetInt(int i, int v) { ASSERT_EQ(Upload(Int(i), &v, sizeof v), cudaSuccess); }
  void SetFlag(int i, bool v) { ASSERT_EQ(Fill(Flag(i), v ? 1 : 0, 1), cudaSuccess); }
  void ZeroInts() { ASSERT_EQ(Fill(ints_.get(), 0, kInts * sizeof(int)), cudaSuccess); }
  int GetInt(int i) {
    int v = -12345;
    EXPECT_EQ(cudaStreamSynchronize(s()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(&v, Int(i), sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

  // Neither the test's stream nor any body stream is left capturing.
  void ExpectNothingCapturing() {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    EXPECT_EQ(cudaStreamIsCapturing(s(), &st), cudaSuccess);
    EXPECT_EQ(st, cudaStreamCaptureStatusNone) << "the captured stream";
    for (int level = 0; level < pool_.depth(); ++level) {
      st = cudaStreamCaptureStatusActive;
      EXPECT_EQ(cudaStreamIsCapturing(*pool_.At(level), &st), cudaSuccess);
      EXPECT_EQ(st, cudaStreamCaptureStatusNone) << "body stream " << level;
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }

  // Body of a loop counted down from *Int(n_at): counts in Int(count_at),
  // then steps Int(left_at) and Flag(flag_at).
  BodyFn CountdownBody(int count_at, int left_at, int flag_at) const {
    int* count = Int(count_at);
    int* left = Int(left_at);
    bool* flag = Flag(flag_at);
    return [=](cudaStream_t bs) {
      CTL_LAUNCH(LaunchCount(count, bs));
      CTL_LAUNCH(LaunchLoopStep(left, flag, bs));
      return OkStatus();
    };
  }

  // Body that counts in Int(at).
  BodyFn CountBody(int at) const {
    int* count = Int(at);
    return [count](cudaStream_t bs) { return LaunchOk(LaunchCount(count, bs), "LaunchCount"); };
  }

  BodyStreamPool pool_;
  LoopCounters counters_;
  LoopRecord record_;
  DeviceBuffer<int> ints_{kInts};
  DeviceBuffer<> flags_{kFlags};
};

}  // namespace encore::testing

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_GPU_FIXTURE_H_
