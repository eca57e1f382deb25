// SPDX-License-Identifier: Apache-2.0
// Capture in the background (capture=background, docs/design.md "Capture in
// the background"): a call whose signature has no graph runs eagerly and
// returns while the manager's worker records the graph; the first call
// after it is ready launches it. Every result is right all along, a failed
// capture turns graphs off, concurrent calls never wait for the capture,
// and a method (or its manager) that goes with captures pending waits for
// them or drops them safely.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/graph/manager.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

// BackgroundCaptures::kMaxInterruptions, as SPEC-visible behaviour: a
// capture CUDA invalidates is tried this many times in a row.
constexpr int BackgroundCapturesMaxInterruptions() { return 3; }

constexpr int64_t kCols = 16;
constexpr int64_t kMaxRows = 16;

TensorRef Rows(void* p, int64_t rows) { return TensorRef{p, DType::kFloat32, {rows, kCols}, {}}; }

int64_t Eager(const MethodReport& r, std::string_view reason) {
  auto it = r.eager_by_reason.find(reason);
  return it == r.eager_by_reason.end() ? 0 : it->second;
}

MethodFlags Background(ShapePolicy on_new_shape = ShapePolicy::kRecapture) {
  MethodFlags f;
  f.warmup_calls = 1;
  f.on_new_shape = on_new_shape;
  f.capture_mode = CaptureMode::kBackground;
  return f;
}

// Inputs and outputs of one caller: x[i] = base + i, y = 2x + 1. Every
// copy is ordered on the caller's stream alone: a device-wide sync while the
// worker records would be refused by CUDA and break that capture (Note [What
// a background capture may coincide with], graph/runtime/background.cc).
struct Buffers {
  Buffers(float base, cudaStream_t stream) : x(kMaxRows * kCols), y(kMaxRows * kCols), base(base) {
    std::vector<float> v(x.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
    x.UploadOn(v, stream);
  }
  DeviceBuffer<float> x, y;
  float base;
};

// A body whose captures on the worker wait, open, until `release` (with
// `first_only`, only the first does); `begun` counts the captures begun.
struct HeldCapture {
  explicit HeldCapture(bool first_only = false) : first_only(first_only) {}
  MethodFn Body() {
    return [this](Call& c) -> Status {
      if (c.kind() == CallKind::kCapture && (++begun == 1 || !first_only)) {
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return testing::AffineCall(c, 2.0f, 1.0f);
    };
  }
  void WaitUntilBegun() const {
    while (begun == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool first_only;
  std::atomic<bool> release{false};
  std::atomic<int> begun{0};
};

class BackgroundCaptureGpuTest : public testing::GpuStreamTest {
 protected:
  void MakeManager() {
    ManagerOptions o;
    o.logger = logs_.logger();
    auto m = Manager::Create(o);
    ASSERT_TRUE(m.ok()) << m.status();
    manager_ = *std::move(m);
  }
  Method* Register(MethodFlags flags, MethodFn fn = nullptr, const std::string& name = "serve") {
    if (!manager_) MakeManager();
    MethodSpec spec;
    spec.name = name;
    spec.constants = std::vector<Constant>{};
    spec.flags = flags;
    spec.fn = fn ? std::move(fn) : [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
    auto r = manager_->Register(std::move(spec));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }
  // One call of `rows` rows on `b` and `stream`; its outputs checked.
  static void RunAndCheck(Method* m, Buffers& b, int64_t rows, cudaStream_t stream) {
    b.y.FillOn(-7.0f, stream);
    TensorRef in = Rows(b.x.get(), rows), out = Rows(b.y.get(), rows);
    Status st = m->Run({&in, 1}, {&out, 1}, stream);
    ASSERT_TRUE(st.ok()) << st;
    std::vector<float> got = b.y.DownloadOn(stream);
    for (int64_t i = 0; i < rows * kCols; ++i) {
      ASSERT_EQ(got[i], 2.0f * (b.base + static_cast<float>(i)) + 1.0f) << "element " << i << ", " << rows << " rows";
    }
    // The row after the call's, where the buffer has one.
    if (rows < kMaxRows) {
      ASSERT_EQ(got[rows * kCols], -7.0f) << "a row beyond the call's was written";
    }
  }

  LogCapture logs_;
  std::unique_ptr<Manager> manager_;
};

// A stream of new shapes: each runs eagerly until its graph is ready and is
// launched by its first call after that; every result is right.
TEST_F(BackgroundCaptureGpuTest, AStreamOfNewShapesIsRightThroughout) {
  Method* m = Register(Background());
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  for (int round = 0; round < 6; ++round) {
    for (int64_t rows : {2, 3, 5, 7}) RunAndCheck(m, b, rows, s());
    if (round == 2) {
      ASSERT_TRUE(manager_->WaitForCaptures().ok());
    }
  }
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  const int64_t replays = m->Report().replays;
  for (int64_t rows : {2, 3, 5, 7}) RunAndCheck(m, b, rows, s());
  MethodReport r = m->Report();
  EXPECT_EQ(r.replays, replays + 4) << r.ToJson();  // every shape has its graph now
  EXPECT_EQ(r.background_captures, r.captures + r.recaptures);
  EXPECT_EQ(r.background_captures, 4);
  EXPECT_GE(Eager(r, eager_reason::kCapturing), 4);
  // The worker's captures are no calls: the call that finds a graph ready
  // replays it.
  EXPECT_EQ(r.calls, r.warmup_calls + r.replays + r.eager_calls);
  EXPECT_EQ(r.graphs_off_reason, "");
  EXPECT_EQ(r.flags.capture_mode, CaptureMode::kBackground);
  EXPECT_NE(manager_->ReportJson().find("\"background_captures\":4"), std::string::npos);
  EXPECT_NE(manager_->ReportJson().find("\"capture_mode\":\"background\""), std::string::npos);
  EXPECT_EQ(logs_.Count("captured"), 1);  // the first; recaptures are rate-limited lines of their own
}

// Padding to buckets in the background: each bucket's calls run eagerly
// until its graph is ready; then they replay it, padded.
TEST_F(BackgroundCaptureGpuTest, BucketsAreCapturedInTheBackground) {
  MethodFlags f = Background(ShapePolicy::kPad);
  f.buckets = {4, 16};
  f.max_padding = 1e6;  // every padded call replays (the measured rule is tests/padding_gpu_test's)
  // The worker's captures wait until the first calls are done, so those
  // calls are eager whatever the worker's speed.
  HeldCapture held;
  Method* m = Register(f, held.Body());
  ASSERT_NE(m, nullptr);
  Buffers b(3.0f, s());
  for (int64_t rows : {16, 3, 9, 1, 4, 12}) RunAndCheck(m, b, rows, s());
  EXPECT_EQ(Eager(m->Report(), eager_reason::kCapturing), 5);
  held.release = true;
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  for (int64_t rows : {2, 13}) RunAndCheck(m, b, rows, s());  // the first launches of both buckets
  for (int64_t rows : {1, 4, 15, 16}) RunAndCheck(m, b, rows, s());
  MethodReport r = m->Report();
  EXPECT_EQ(r.background_captures, 2);
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.replays, 6);  // the first launches too
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_EQ(r.real_rows, 2 + 13 + 1 + 4 + 15 + 16);
}

// Direct binding's probe runs the graph, which a background capture never
// does: the graph is staged, saying why.
TEST_F(BackgroundCaptureGpuTest, ABackgroundGraphIsStagedWithTheReason) {
  MethodFlags f = Background();
  f.binding = Binding::kDirect;
  Method* m = Register(f);
  ASSERT_NE(m, nullptr);
  Buffers b(0.5f, s());
  RunAndCheck(m, b, 4, s());
  RunAndCheck(m, b, 4, s());
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  RunAndCheck(m, b, 4, s());
  RunAndCheck(m, b, 4, s());
  MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 2);  // the first launch and one more
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("capture=background"), std::string::npos) << r.binding_reason;
}

// A capture that fails on the worker turns graphs off with its reason; the
// calls were eager, and right, all along.
TEST_F(BackgroundCaptureGpuTest, AFailedBackgroundCaptureTurnsGraphsOff) {
  Method* m = Register(Background(), [](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) return CaptureRefusal("this body cannot be captured");
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  Buffers b(2.0f, s());
  for (int i = 0; i < 3; ++i) RunAndCheck(m, b, 5, s());
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_NE(r.graphs_off_reason.find("capture failed at method"), std::string::npos) << r.graphs_off_reason;
  EXPECT_NE(r.graphs_off_reason.find("this body cannot be captured"), std::string::npos);
  EXPECT_EQ(r.graph_memory_bytes, 0u);  // its memory went with it
  RunAndCheck(m, b, 5, s());
  r = m->Report();
  EXPECT_GE(Eager(r, eager_reason::kCaptureFailed), 1);  // a call after the failure (the third may be one)
  EXPECT_EQ(r.eager_calls, r.calls - r.warmup_calls);
  auto ev = logs_.Find("capture_failed");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->field("background"), "true");
}

// The first launch of a graph the worker made fails: it ran nothing, so the
// call runs eagerly (right), graphs go off and the capture's memory goes.
TEST_F(BackgroundCaptureGpuTest, AFailedFirstLaunchRunsTheCallEagerly) {
  Method* m = Register(Background());
  ASSERT_NE(m, nullptr);
  Buffers b(4.0f, s());
  RunAndCheck(m, b, 6, s());
  RunAndCheck(m, b, 6, s());
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  EXPECT_GT(m->Report().graph_memory_bytes, 0u);  // held for the first launch
  {
    CudaFaultInjector inject;
    inject.FailNth(CudaCall::kGraphLaunch, 1, cudaErrorInvalidValue);
    RunAndCheck(m, b, 6, s());
    EXPECT_EQ(inject.Failed(CudaCall::kGraphLaunch), 1);
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.captures, 0);
  EXPECT_NE(r.graphs_off_reason.find("first_launch"), std::string::npos) << r.graphs_off_reason;
  EXPECT_EQ(r.graph_memory_bytes, 0u);
  RunAndCheck(m, b, 6, s());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // encore's error is not the application's
}

// While a capture is held on the worker, two threads call the method on
// streams of their own: none waits for the capture, every result is right.
TEST_F(BackgroundCaptureGpuTest, TwoThreadsCallWhileACaptureIsPending) {
  HeldCapture held;
  Method* m = Register(Background(), held.Body());
  ASSERT_NE(m, nullptr);
  Buffers b0(1.0f, s());
  RunAndCheck(m, b0, 8, s());  // the warmup
  RunAndCheck(m, b0, 8, s());  // queues the capture
  held.WaitUntilBegun();
  std::atomic<int> done{0};
  auto caller = [&](float base) {
    auto st = Stream::Create();
    ASSERT_TRUE(st.ok());
    Buffers b(base, st->get());
    for (int i = 0; i < 50; ++i) RunAndCheck(m, b, 8, st->get());
    ++done;
  };
  std::thread t1(caller, 10.0f), t2(caller, 20.0f);
  t1.join();
  t2.join();
  EXPECT_EQ(done.load(), 2);  // every call returned while the capture was held
  MethodReport r = m->Report();
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(Eager(r, eager_reason::kCapturing), 101);
  held.release = true;
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  RunAndCheck(m, b0, 8, s());
  RunAndCheck(m, b0, 8, s());
  r = m->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 2);  // the first launch and one more
  EXPECT_EQ(held.begun.load(), 1);
}

// A manager destroyed while one capture is being recorded and others are
// queued: it waits for the one, drops the rest, and nothing runs after.
TEST_F(BackgroundCaptureGpuTest, AManagerDestroyedWithCapturesPending) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto captures = std::make_shared<std::atomic<int>>(0);
  Method* m = Register(Background(), [release, captures](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) {
      ++*captures;
      while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  RunAndCheck(m, b, 2, s());  // warmup
  for (int64_t rows : {2, 3, 4, 5}) RunAndCheck(m, b, rows, s());
  while (*captures == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread releaser([release] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    *release = true;
  });
  manager_.reset();
  releaser.join();
  EXPECT_EQ(captures->load(), 1);  // the queued ones never ran
  // ... nor later: the worker went with its manager, and the method's
  // instances were not kept with tasks still queued.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(captures->load(), 1);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // no capture is left open
}

// A capture held open on the worker while this thread and another do what
// an application does beside it: every call succeeds, and the capture
// survives (Note [What a background capture may coincide with]).
TEST_F(BackgroundCaptureGpuTest, OtherThreadsWorkBesideAnOpenCapture) {
  HeldCapture held;
  Method* m = Register(Background(), held.Body());
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  RunAndCheck(m, b, 4, s());  // the warmup
  RunAndCheck(m, b, 4, s());  // queues the capture
  held.WaitUntilBegun();
  DeviceBuffer<float> scratch(1024);
  ASSERT_TRUE(scratch.ok());
  // Legacy-stream work: a kernel, a pageable copy, the legacy stream's sync.
  EXPECT_EQ(testing::LaunchAffine(scratch.get(), scratch.get(), 1.0f, 1.0f, 1024, cudaStreamLegacy), cudaSuccess);
  std::vector<float> host(1024, 1.0f);
  EXPECT_EQ(cudaMemcpy(scratch.get(), host.data(), 4096, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
  // Allocations and frees.
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 64 << 20), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  // An event sync, and another thread's launches and syncs on its own stream.
  cudaEvent_t ev;
  ASSERT_EQ(cudaEventCreate(&ev), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(ev, s()), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(ev), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(ev), cudaSuccess);
  std::thread other([&] {
    auto st = Stream::Create();
    ASSERT_TRUE(st.ok());
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(testing::LaunchAffine(scratch.get(), scratch.get(), 1.0f, 0.0f, 1024, st->get()), cudaSuccess);
    }
    EXPECT_EQ(cudaStreamSynchronize(st->get()), cudaSuccess);
  });
  other.join();
  // Captures of this thread's own, thread-local and global (CUDA's default,
  // torch.cuda.graph's), with an allocation inside the global one.
  for (cudaStreamCaptureMode mode : {cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeGlobal}) {
    auto st = Stream::Create();
    ASSERT_TRUE(st.ok());
    ASSERT_EQ(cudaStreamBeginCapture(st->get(), mode), cudaSuccess);
    EXPECT_EQ(testing::LaunchAffine(scratch.get(), scratch.get(), 1.0f, 1.0f, 1024, st->get()), cudaSuccess);
    cudaGraph_t g = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(st->get(), &g), cudaSuccess) << "mode " << mode;
    cudaGraphExec_t x = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    EXPECT_EQ(cudaGraphLaunch(x, st->get()), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(st->get()), cudaSuccess);
    (void)cudaGraphExecDestroy(x);
    (void)cudaGraphDestroy(g);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // Calls of the method meanwhile: eager, right.
  for (int i = 0; i < 3; ++i) RunAndCheck(m, b, 4, s());
  held.release = true;
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  RunAndCheck(m, b, 4, s());  // the first launch
  RunAndCheck(m, b, 4, s());  // a replay
  MethodReport r = m->Report();
  EXPECT_EQ(r.graphs_off_reason, "") << r.ToJson();
  EXPECT_EQ(r.background_captures, 1);
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 2);  // the first launch and one more
  EXPECT_EQ(r.capture_failures, 0);
  EXPECT_EQ(logs_.Count("capture_interrupted"), 0);
  EXPECT_EQ(held.begun.load(), 1);
}

// A device-wide sync on another thread while the worker records: CUDA
// refuses it there and invalidates the capture. The capture is made again
// on the signature's next call; graphs stay on and every result is right.
TEST_F(BackgroundCaptureGpuTest, ADeviceSyncBesideACaptureIsCapturedAgain) {
  HeldCapture held(/*first_only=*/true);
  Method* m = Register(Background(), held.Body());
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  RunAndCheck(m, b, 4, s());  // the warmup
  RunAndCheck(m, b, 4, s());  // queues the capture
  held.WaitUntilBegun();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);  // CUDA's rule, not encore's
  (void)cudaGetLastError();
  held.release = true;
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  MethodReport r = m->Report();
  EXPECT_EQ(r.graphs_off_reason, "") << r.ToJson();
  EXPECT_EQ(r.capture_failures, 0);
  EXPECT_EQ(logs_.Count("capture_interrupted"), 1);
  RunAndCheck(m, b, 4, s());  // queues it again
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  RunAndCheck(m, b, 4, s());  // the first launch
  RunAndCheck(m, b, 4, s());  // a replay
  r = m->Report();
  EXPECT_EQ(r.graphs_off_reason, "") << r.ToJson();
  EXPECT_EQ(r.background_captures, 1);
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 2);  // the first launch and one more
  EXPECT_EQ(held.begun.load(), 2);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// A body that breaks its own capture every time (a sync of the captured
// stream) is not retried for ever: graphs go off after the third.
// A body that makes its per-thread state on first use, as libraries do
// (cuBLAS and cuDNN handles, their workspaces: cudaMalloc), makes it on the
// worker thread inside the worker's first capture, which never ran a warmup
// there. The worker records with its capture mode relaxed, so the
// allocation is made, not refused, and the capture succeeds (on an H100 a
// serving encoder's cuDNN attention failed every background capture with
// CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED before).
TEST_F(BackgroundCaptureGpuTest, ABodyThatAllocatesOnFirstUseOnTheWorkerCaptures) {
  std::atomic<int> made{0};
  Method* m = Register(Background(), [&made](Call& c) -> Status {
    thread_local void* workspace = nullptr;
    if (workspace == nullptr) {
      if (cudaError_t e = cudaMalloc(&workspace, 1 << 20); e != cudaSuccess) {
        (void)cudaGetLastError();
        return CudaStatus(e, "first-use workspace");
      }
      ++made;
    }
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  RunAndCheck(m, b, 4, s());  // the warmup, on this thread
  RunAndCheck(m, b, 4, s());  // queues the capture
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  RunAndCheck(m, b, 4, s());  // the first launch
  RunAndCheck(m, b, 4, s());  // a replay
  MethodReport r = m->Report();
  EXPECT_EQ(r.graphs_off_reason, "") << r.ToJson();
  EXPECT_EQ(r.capture_failures, 0) << r.ToJson();
  EXPECT_EQ(r.background_captures, 1) << r.ToJson();
  EXPECT_EQ(r.replays, 2);
  EXPECT_EQ(made.load(), 2);  // this thread's, then the worker's inside its capture
  EXPECT_EQ(logs_.Count("capture_interrupted"), 0);
}

TEST_F(BackgroundCaptureGpuTest, ACaptureBrokenEveryTimeTurnsGraphsOffAtTheThird) {
  std::atomic<int> captures{0};
  Method* m = Register(Background(), [&](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) {
      ++captures;
      (void)cudaStreamSynchronize(c.stream());  // refused, and the capture is invalidated
    }
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  RunAndCheck(m, b, 4, s());  // the warmup
  for (int i = 0; i < 6; ++i) {
    RunAndCheck(m, b, 4, s());
    ASSERT_TRUE(manager_->WaitForCaptures().ok());
  }
  MethodReport r = m->Report();
  EXPECT_EQ(captures.load(), BackgroundCapturesMaxInterruptions());
  EXPECT_EQ(logs_.Count("capture_interrupted"), BackgroundCapturesMaxInterruptions() - 1);
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_NE(r.graphs_off_reason.find("capture failed"), std::string::npos) << r.ToJson();
  EXPECT_EQ(r.captures, 0);
}

// A sleep keeps a graph the worker finished: its first launch after the
// wake needs no capture.
TEST_F(BackgroundCaptureGpuTest, ASleepKeepsAReadyBackgroundCapture) {
  std::atomic<int> captures{0};
  Method* m = Register(Background(), [&](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) ++captures;
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  RunAndCheck(m, b, 4, s());  // the warmup
  RunAndCheck(m, b, 4, s());  // queues the capture
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  StatusOr<int64_t> slept = manager_->Sleep();
  ASSERT_TRUE(slept.ok()) << slept.status();
  ASSERT_TRUE(manager_->Wake().ok());
  const int64_t capturing = Eager(m->Report(), eager_reason::kCapturing);
  RunAndCheck(m, b, 4, s());  // the ready graph's first launch
  RunAndCheck(m, b, 4, s());  // a replay
  MethodReport r = m->Report();
  EXPECT_EQ(Eager(r, eager_reason::kCapturing), capturing) << r.ToJson();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 2);  // the first launch and one more
  EXPECT_EQ(r.background_captures, 1);
  EXPECT_EQ(captures.load(), 1);  // recorded once, before the sleep
}

// Release while a capture is recorded waits for it, drops what it made and
// warms up again; a ready graph no call launched is dropped too.
TEST_F(BackgroundCaptureGpuTest, ReleaseWithCapturesPending) {
  Method* m = Register(Background());
  ASSERT_NE(m, nullptr);
  Buffers b(5.0f, s());
  RunAndCheck(m, b, 2, s());
  RunAndCheck(m, b, 2, s());
  RunAndCheck(m, b, 3, s());
  ASSERT_TRUE(m->Release().ok());
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  MethodReport r = m->Report();
  EXPECT_EQ(r.graph_memory_bytes, 0u);
  EXPECT_EQ(r.captures + r.recaptures, 0);
  EXPECT_EQ(r.phase, MethodPhase::kWarmup);
  RunAndCheck(m, b, 2, s());  // a warmup again
  RunAndCheck(m, b, 2, s());
  ASSERT_TRUE(manager_->WaitForCaptures().ok());
  RunAndCheck(m, b, 2, s());
  EXPECT_EQ(m->Report().captures, 1);
}

// WaitForCaptures from inside a body would wait for what may wait for that
// body: refused.
TEST_F(BackgroundCaptureGpuTest, WaitForCapturesFromABodyIsRefused) {
  Status inner;
  Method* m = Register(Background(), [&](Call& c) -> Status {
    if (c.kind() == CallKind::kWarmup) inner = manager_->WaitForCaptures();
    return testing::AffineCall(c, 2.0f, 1.0f);
  });
  ASSERT_NE(m, nullptr);
  Buffers b(1.0f, s());
  RunAndCheck(m, b, 2, s());
  EXPECT_EQ(inner.code(), StatusCode::kFailedPrecondition) << inner;
  EXPECT_TRUE(manager_->WaitForCaptures().ok());
}

// A method of several segments captures in the foreground, saying why once.
TEST_F(BackgroundCaptureGpuTest, StagesWithAnEagerOneCaptureInTheForeground) {
  MakeManager();
  MethodSpec spec;
  spec.name = "staged";
  spec.constants = std::vector<Constant>{};
  spec.flags = Background();
  spec.stages = {Stage{"a", [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); }},
                 Stage{"host", [](Call&) { return OkStatus(); }, /*eager=*/true}};
  auto r = manager_->Register(std::move(spec));
  ASSERT_TRUE(r.ok()) << r.status();
  Buffers b(1.0f, s());
  RunAndCheck(*r, b, 4, s());
  RunAndCheck(*r, b, 4, s());  // captured now, in the foreground
  MethodReport rep = (*r)->Report();
  EXPECT_EQ(rep.captures, 1);
  EXPECT_EQ(rep.background_captures, 0);
  auto ev = logs_.Find("capture_foreground");
  ASSERT_TRUE(ev.has_value());
  EXPECT_NE(ev->field("reason").find("eager stages"), std::string::npos);
}

}  // namespace
}  // namespace encore
