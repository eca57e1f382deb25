// SPDX-License-Identifier: Apache-2.0
// The graphed method on a real GPU: phases, staging with moving addresses, the
// replay guard, shape policies, capture failures, host constants, Release,
// legacy-stream capture and concurrency.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/graph/manager.h"
#include "encore/shims/read_scalar.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr float kSentinel = -12345.0f;

TensorRef F32(void* p, Shape s, Strides st = {}) { return TensorRef{p, DType::kFloat32, s, st}; }

struct Fixture {
  LogCapture logs;
  std::unique_ptr<Manager> manager;
  cudaStream_t stream = nullptr;

  explicit Fixture(MethodFlags defaults = {}, std::string flags_text = "") {
    ManagerOptions o;
    o.defaults = defaults;
    o.flags_text = std::move(flags_text);
    o.logger = logs.logger();
    auto m = Manager::Create(o);
    EXPECT_TRUE(m.ok()) << m.status();
    manager = *std::move(m);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  ~Fixture() {
    manager.reset();
    cudaStreamDestroy(stream);
  }
};

// out = in * 2 + 1 elementwise; counts host executions.
MethodSpec Affine(std::string name, std::atomic<int>* host_runs, std::optional<MethodFlags> flags = {}) {
  MethodSpec spec;
  spec.name = std::move(name);
  spec.constants = std::vector<Constant>{};
  spec.flags = flags;
  spec.fn = [host_runs](Call& c) -> Status {
    if (host_runs) ++*host_runs;
    const TensorRef& in = c.input(0);
    const TensorRef& out = c.output(0);
    if (in.numel() != out.numel()) return InvalidArgumentError("affine: numel differs");
    return testing::AffineCall(c, 2.0f, 1.0f);
  };
  return spec;
}

std::vector<float> Iota(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

TEST(ManagerGpuTest, PhasesAndResultsWhileAddressesMove) {
  ENCORE_REQUIRE_GPU();
  Fixture fx;
  std::atomic<int> host_runs{0};
  auto m = fx.manager->Register(Affine("forward", &host_runs));
  ASSERT_TRUE(m.ok()) << m.status();
  Method* method = *m;
  constexpr size_t n = 96;  // (2,3,4,4)
  std::vector<std::unique_ptr<DeviceBuffer<float>>> ins, outs;
  for (int i = 0; i < 3; ++i) {
    ins.push_back(std::make_unique<DeviceBuffer<float>>(n));
    outs.push_back(std::make_unique<DeviceBuffer<float>>(n));
  }
  for (int call = 0; call < 12; ++call) {
    DeviceBuffer<float>& in = *ins[call % 3];
    DeviceBuffer<float>& out = *outs[(call + 1) % 3];
    in.Upload(Iota(n, static_cast<float>(call * 10)));
    out.Fill(kSentinel);
    TensorRef i = F32(in.get(), {2, 3, 4, 4});
    TensorRef o = F32(out.get(), {2, 3, 4, 4});
    ASSERT_TRUE(method->Run({&i, 1}, {&o, 1}, fx.stream).ok()) << "call " << call;
    ASSERT_EQ(cudaStreamSynchronize(fx.stream), cudaSuccess);
    std::vector<float> got = out.Download();
    for (size_t k = 0; k < n; ++k) {
      ASSERT_EQ(got[k], (call * 10 + static_cast<float>(k)) * 2 + 1) << "call " << call << " k " << k;
    }
  }
  MethodReport r = method->Report();
  EXPECT_EQ(r.calls, 12);
  EXPECT_EQ(r.warmup_calls, 3);
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 8);
  EXPECT_EQ(r.eager_calls, 0);
  EXPECT_EQ(r.phase, MethodPhase::kReplay);
  EXPECT_EQ(host_runs.load(), 4);  // three warmups and the capture only
  ASSERT_EQ(r.captured_input_shapes.size(), 1u);
  EXPECT_EQ(r.captured_input_shapes[0][0], (Shape{2, 3, 4, 4}));
  // binding=auto binds the graph directly: the affine kernel and the
  // completion record (staged, it would be 4 with the staging nodes).
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.graph_nodes, 2u);
  EXPECT_GT(r.memory.reserved_bytes, 0u);
  EXPECT_EQ(fx.logs.Count("captured"), 1);
  EXPECT_NE(fx.manager->ReportJson().find("\"replays\":8"), std::string::npos);
}

// Callers that cycle through a few buffers get one executable per address set
// after seeing it twice, and then replay with no parameter rewrite at all;
// addresses that never repeat reuse one executable with a rewrite per call.
TEST(ManagerGpuTest, RecurringAddressesGetTheirOwnExecutable) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.binding = Binding::kStaged;  // staged variants (binding_gpu_test covers direct ones)
  f.warmup_calls = 0;
  Fixture fx(f);
  auto m = fx.manager->Register(Affine("rotating", nullptr));
  ASSERT_TRUE(m.ok());
  constexpr int64_t n = 300;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> ins, outs;
  for (int i = 0; i < 12; ++i) {
    ins.push_back(std::make_unique<DeviceBuffer<float>>(n));
    outs.push_back(std::make_unique<DeviceBuffer<float>>(n));
    ins.back()->Upload(Iota(n, 100.0f * i));
  }
  auto call = [&](int i) {
    outs[i]->Fill(kSentinel);
    TensorRef ti = F32(ins[i]->get(), {n}), to = F32(outs[i]->get(), {n});
    ASSERT_TRUE((*m)->Run({&ti, 1}, {&to, 1}, fx.stream).ok());
    std::vector<float> got = outs[i]->Download();
    for (int64_t k = 0; k < n; ++k) ASSERT_EQ(got[k], (100.0f * i + k) * 2 + 1) << "buffers " << i << " k " << k;
  };
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) call(i);
  }
  // Sets 1..3 once they recur, and set 0 again: the capture's executable
  // was rewritten for the sets seen once in round 0, and a recurring set
  // answered by a rewritten executable earns a clean one (VariantCache).
  EXPECT_EQ((*m)->Report().exec_variants, 4);
  {
    CudaFaultInjector inj;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 4; ++i) call(i);
    }
    EXPECT_EQ(inj.Count(CudaCall::kGraphExecKernelNodeSetParams), 0);
    EXPECT_EQ(inj.Count(CudaCall::kGraphLaunch), 12);
    EXPECT_EQ(inj.Count(CudaCall::kGraphInstantiate), 0);
  }
  {
    // Sets seen once: no new executable, one rewrite each.
    CudaFaultInjector inj;
    for (int i = 4; i < 12; ++i) call(i);
    EXPECT_EQ(inj.Count(CudaCall::kGraphInstantiate), 0);
    EXPECT_EQ(inj.Count(CudaCall::kGraphExecKernelNodeSetParams), 8);
  }
  EXPECT_EQ((*m)->Report().exec_variants, 4);
  EXPECT_EQ((*m)->Report().replays, 12 * 2 + 8 - 1);
}

// Many inputs and outputs: more than one head and tail node, each output
// lands in its own caller buffer.
TEST(ManagerGpuTest, ManyInputsAndOutputsAreStagedInChunks) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.binding = Binding::kStaged;  // the staging chunks are what this tests
  f.warmup_calls = 1;
  Fixture fx(f);
  constexpr int kT = 19;  // more than two chunks of 8
  MethodSpec spec;
  spec.name = "many";
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& c) -> Status {
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 1.0f, static_cast<float>(i), i));
    }
    return OkStatus();
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  std::vector<std::unique_ptr<DeviceBuffer<float>>> ins, outs;
  for (int i = 0; i < 2 * kT; ++i) {
    ins.push_back(std::make_unique<DeviceBuffer<float>>(16 + i));
    outs.push_back(std::make_unique<DeviceBuffer<float>>(16 + i));
  }
  for (int call = 0; call < 5; ++call) {
    std::vector<TensorRef> ti, to;
    for (int i = 0; i < kT; ++i) {
      int b = (call % 2) * kT + i;  // alternate between two sets of buffers
      ins[b]->Upload(Iota(16 + i, 1000.0f * call));
      outs[b]->Fill(kSentinel);
      ti.push_back(F32(ins[b]->get(), {16 + i}));
      to.push_back(F32(outs[b]->get(), {16 + i}));
    }
    ASSERT_TRUE((*m)->Run(ti, to, fx.stream).ok()) << call;
    for (int i = 0; i < kT; ++i) {
      std::vector<float> got = outs[(call % 2) * kT + i]->Download();
      ASSERT_EQ(got[0], 1000.0f * call + i) << "call " << call << " output " << i;
      ASSERT_EQ(got[15 + i], 1000.0f * call + 15 + i + i) << "call " << call << " output " << i;
    }
  }
  // 3 heads + 19 kernels + 3 tails + the completion record.
  EXPECT_EQ((*m)->Report().graph_nodes, 26u);
  EXPECT_EQ((*m)->Report().replays, 3);
}

TEST(ManagerGpuTest, ReshapeWithSameBytesIsRefusedAndNothingChanges) {
  ENCORE_REQUIRE_GPU();
  Fixture fx;
  MethodFlags f;
  f.warmup_calls = 1;
  auto m = fx.manager->Register(Affine("forward", nullptr, f));
  ASSERT_TRUE(m.ok());
  Method* method = *m;
  DeviceBuffer<float> in(96), out(96);
  in.Upload(Iota(96, 0));
  TensorRef i = F32(in.get(), {2, 3, 4, 4});
  TensorRef o = F32(out.get(), {2, 3, 4, 4});
  ASSERT_TRUE(method->Run({&i, 1}, {&o, 1}, fx.stream).ok());
  ASSERT_TRUE(method->Run({&i, 1}, {&o, 1}, fx.stream).ok());  // capture
  ASSERT_EQ(cudaStreamSynchronize(fx.stream), cudaSuccess);
  MethodReport before = method->Report();

  struct Case {
    std::vector<TensorRef> in, out;
    const char* message;
  };
  std::vector<Case> cases = {
      {{F32(in.get(), {2, 4, 3, 4})}, {o}, "method 'forward': input 0 has size 4 in dim 1, captured with 3"},
      {{TensorRef{in.get(), DType::kInt32, {2, 3, 4, 4}, {}}}, {o},
       "method 'forward': input 0 has dtype int32, captured with float32"},
      {{F32(in.get(), {6, 4, 4})}, {o}, "method 'forward': input 0 has rank 3, captured with 4"},
      {{F32(in.get(), {2, 3, 4, 4}, {64, 16, 4, 1})}, {o},
       "method 'forward': input 0 has stride 64 in dim 0, captured with 48"},
      {{i, i}, {o}, "method 'forward': 2 inputs given, captured with 1"},
      {{i}, {F32(out.get(), {2, 4, 3, 4})}, "method 'forward': output 0 has size 4 in dim 1, captured with 3"},
  };
  for (const Case& c : cases) {
    out.Fill(kSentinel);
    Status s = method->Run(c.in, c.out, fx.stream);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.message;
    // The refusal's fixed text, then the remedy (a refusal says what to do).
    EXPECT_EQ(s.message(), std::string(c.message) + "; set on_new_shape=recapture|eager|pad for 'forward', or call Release()");
    ASSERT_EQ(cudaStreamSynchronize(fx.stream), cudaSuccess);
    for (float v : out.Download()) ASSERT_EQ(v, kSentinel) << c.message;
  }
  MethodReport after = method->Report();
  EXPECT_EQ(after.calls, before.calls);
  EXPECT_EQ(after.replays, before.replays);
  EXPECT_EQ(after.captures, before.captures);
  EXPECT_EQ(after.refusals, before.refusals + static_cast<int64_t>(cases.size()));
  EXPECT_EQ(after.phase, MethodPhase::kReplay);
  // And the graph still replays the captured shape correctly.
  out.Fill(kSentinel);
  ASSERT_TRUE(method->Run({&i, 1}, {&o, 1}, fx.stream).ok());
  EXPECT_EQ(out.Download()[5], 11.0f);
}

TEST(ManagerGpuTest, BadTensorsAreRejectedBeforeAnything) {
  ENCORE_REQUIRE_GPU();
  Fixture fx;
  auto m = fx.manager->Register(Affine("forward", nullptr));
  ASSERT_TRUE(m.ok());
  TensorRef null_in = F32(nullptr, {4});
  DeviceBuffer<float> out(4);
  TensorRef o = F32(out.get(), {4});
  Status s = (*m)->Run({&null_in, 1}, {&o, 1}, fx.stream);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "method 'forward': input 0 has a null data pointer and shape (4)");
  EXPECT_EQ((*m)->Report().calls, 0);
  EXPECT_EQ((*m)->Report().warmup_calls, 0);
}

TEST(ManagerGpuTest, EagerPolicyRunsNewShapeEagerlyAndKeepsGraph) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 0;
  f.on_new_shape = ShapePolicy::kEager;
  Fixture fx(f);
  std::atomic<int> runs{0};
  auto m = fx.manager->Register(Affine("f", &runs));
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(64), out(64);
  in.Upload(Iota(64, 1));
  TensorRef a = F32(in.get(), {8, 8}), ao = F32(out.get(), {8, 8});
  TensorRef b = F32(in.get(), {4, 16}), bo = F32(out.get(), {4, 16});
  ASSERT_TRUE((*m)->Run({&a, 1}, {&ao, 1}, fx.stream).ok());  // capture
  out.Fill(kSentinel);
  ASSERT_TRUE((*m)->Run({&b, 1}, {&bo, 1}, fx.stream).ok());  // eager
  EXPECT_EQ(out.Download()[63], 64.0f * 2 + 1);
  ASSERT_TRUE((*m)->Run({&a, 1}, {&ao, 1}, fx.stream).ok());  // replay
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.eager_calls, 1);
  EXPECT_EQ(r.replays, 1);
  EXPECT_EQ(runs.load(), 2);  // capture + eager
}

TEST(ManagerGpuTest, RecaptureKeepsUpToMaxGraphsAndUpdatesInPlace) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.binding = Binding::kStaged;  // counts the staged executable's update in place
  f.warmup_calls = 0;
  f.on_new_shape = ShapePolicy::kRecapture;
  f.max_graphs = 2;
  Fixture fx(f);
  auto m = fx.manager->Register(Affine("f", nullptr));
  ASSERT_TRUE(m.ok());
  Method* method = *m;
  DeviceBuffer<float> in(4096), out(4096);
  in.Upload(Iota(4096, 0));
  auto run = [&](int64_t n) {
    TensorRef i = F32(in.get(), {n}), o = F32(out.get(), {n});
    out.Fill(kSentinel);
    Status s = method->Run({&i, 1}, {&o, 1}, fx.stream);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<float> got = out.Download();
    for (int64_t k = 0; k < n; ++k) EXPECT_EQ(got[k], k * 2.0f + 1) << "n " << n << " k " << k;
    for (size_t k = n; k < got.size(); ++k) ASSERT_EQ(got[k], kSentinel) << "n " << n << " wrote past the end";
  };
  run(100);   // capture
  run(200);   // recapture: 2 graphs
  run(100);   // replay of the first
  EXPECT_EQ(method->Report().instantiations, 2);
  {
    // A third shape with the cache full: the least recently used graph (200)
    // is updated in place, with no new instantiation.
    CudaFaultInjector inj;
    run(300);
    EXPECT_EQ(inj.Count(CudaCall::kGraphInstantiate), 0);
    EXPECT_EQ(inj.Count(CudaCall::kGraphExecUpdate), 1);
  }
  MethodReport r = method->Report();
  EXPECT_EQ(r.recaptures, 2);
  EXPECT_EQ(r.updates_in_place, 1);
  ASSERT_EQ(r.captured_input_shapes.size(), 2u);
  EXPECT_EQ(r.captured_input_shapes[0][0], (Shape{300}));
  EXPECT_EQ(r.captured_input_shapes[1][0], (Shape{100}));
  run(300);  // replays the updated executable with moved addresses
  run(100);
  r = method->Report();
  EXPECT_EQ(r.replays, 3);
  EXPECT_EQ(r.recaptures, 2);
  run(200);  // 200 was dropped: recaptured
  EXPECT_EQ(method->Report().recaptures, 3);
}

// A method whose capture is refused by a shim: the eager retry's result is
// returned, graphs go off, info not error.
TEST(ManagerGpuTest, ShimRefusalFallsBackToEager) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 1;
  Fixture fx(f);
  DeviceBuffer<float> scalar(1);
  scalar.Upload({5.0f});
  MethodSpec spec;
  spec.name = "reads";
  spec.constants = std::vector<Constant>{{"scalar", scalar.get(), sizeof(float)}};
  spec.fn = [&](Call& c) -> Status {
    ENCORE_ASSIGN_OR_RETURN(float s, shims::ReadScalar(scalar.get(), c.stream()));
    return testing::AffineCall(c, 1.0f, s);
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(16), out(16);
  in.Upload(Iota(16, 0));
  TensorRef i = F32(in.get(), {16}), o = F32(out.get(), {16});
  for (int call = 0; call < 4; ++call) {
    scalar.Upload({static_cast<float>(call)});
    out.Fill(kSentinel);
    ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok()) << call;
    EXPECT_EQ(out.Download()[3], 3.0f + call) << call;
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(r.eager_calls, 3);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_NE(r.graphs_off_reason.find("ReadScalar"), std::string::npos) << r.graphs_off_reason;
  auto ev = fx.logs.Find("capture_failed", "method", "reads");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->level, spdlog::level::info);
  EXPECT_EQ(ev->field("expected"), "true");
  for (const auto& e : fx.logs.events()) EXPECT_LT(e.level, spdlog::level::err) << e.line;
  // The caller's stream is usable and not capturing.
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(fx.stream, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusNone);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A capture-illegal call: a copy to pageable memory on the method's stream,
// then a sync (what an `.item()` does). CUDA refuses both inside a capture.
// (A plain cudaMemcpy on the legacy stream while a non-blocking stream is
// captured is not seen by CUDA at all; see docs/limitations.md.)
TEST(ManagerGpuTest, IllegalCallInCaptureFallsBackToEager) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 1;
  Fixture fx(f);
  MethodSpec spec;
  spec.name = "sync_copy";
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& c) -> Status {
    float host = 0;  // pageable
    cudaError_t e = cudaMemcpyAsync(&host, c.input(0).data, sizeof(float), cudaMemcpyDeviceToHost, c.stream());
    if (e == cudaSuccess) e = cudaStreamSynchronize(c.stream());
    if (e != cudaSuccess) return CudaStatus(e, "cudaMemcpyAsync to pageable memory");
    return testing::AffineCall(c, 1.0f, host);
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(8), out(8);
  for (int call = 0; call < 3; ++call) {
    in.Upload(Iota(8, static_cast<float>(call)));
    out.Fill(kSentinel);
    TensorRef i = F32(in.get(), {8}), o = F32(out.get(), {8});
    Status s = (*m)->Run({&i, 1}, {&o, 1}, fx.stream);
    ASSERT_TRUE(s.ok()) << call << ": " << s;
    std::vector<float> got = out.Download();
    EXPECT_EQ(got[2], (call + 2.0f) + call) << call;  // in[2] + in[0]
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.capture_failures, 1);
  EXPECT_EQ(r.eager_calls, 2);
  auto ev = fx.logs.Find("capture_failed", "method", "sync_copy");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->level, spdlog::level::info) << ev->line;
  EXPECT_EQ(ev->field("expected"), "true");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(ManagerGpuTest, EagerRetryFailureIsLoggedAtErrorAndReturned) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 0;
  Fixture fx(f);
  MethodSpec spec;
  spec.name = "broken";
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) return CaptureRefusal("test refusal");
    return InternalError("the eager path is broken too");
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(4), out(4);
  TensorRef i = F32(in.get(), {4}), o = F32(out.get(), {4});
  Status s = (*m)->Run({&i, 1}, {&o, 1}, fx.stream);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "the eager path is broken too");
  auto cf = fx.logs.Find("capture_failed");
  ASSERT_TRUE(cf.has_value());
  EXPECT_EQ(cf->level, spdlog::level::info);
  auto ef = fx.logs.Find("eager_failed", "method", "broken");
  ASSERT_TRUE(ef.has_value());
  EXPECT_EQ(ef->level, spdlog::level::err);
}

TEST(ManagerGpuTest, ExceptionInCaptureEndsTheCaptureCleanly) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 0;
  Fixture fx(f);
  std::atomic<int> runs{0};
  MethodSpec spec = Affine("throws", &runs);
  MethodFn inner = spec.fn;
  spec.fn = [inner](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) {
      // Launch something first so the capture holds a node.
      Status s = inner(c);
      (void)s;
      throw std::runtime_error("boom");
    }
    return inner(c);
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(8), out(8);
  in.Upload(Iota(8, 0));
  out.Fill(kSentinel);
  TensorRef i = F32(in.get(), {8}), o = F32(out.get(), {8});
  Status s = (*m)->Run({&i, 1}, {&o, 1}, fx.stream);
  EXPECT_TRUE(s.ok()) << s;  // the eager retry succeeded
  EXPECT_EQ(out.Download()[7], 15.0f);
  EXPECT_NE((*m)->Report().graphs_off_reason.find("threw: boom"), std::string::npos);
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(fx.stream, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusNone);
}

// A method that branches on a host flag updated every call.
void HostFlagCase(bool pinned) {
  Fixture fx;
  int* flag = nullptr;
  int pageable_flag = 0;
  if (pinned) {
    ASSERT_EQ(cudaMallocHost(&flag, sizeof(int)), cudaSuccess);
  } else {
    flag = &pageable_flag;
  }
  MethodSpec spec;
  spec.name = "branchy";
  spec.constants = std::vector<Constant>{{"use_double", flag, sizeof(int)}};
  spec.fn = [flag](Call& c) -> Status {
    float a = *flag ? 2.0f : 1.0f;
    return testing::AffineCall(c, a, 0.0f);
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(8), out(8);
  in.Upload(Iota(8, 1));
  TensorRef i = F32(in.get(), {8}), o = F32(out.get(), {8});
  for (int call = 0; call < 10; ++call) {
    *flag = call % 2;
    ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok());
    EXPECT_EQ(out.Download()[3], 4.0f * (call % 2 ? 2 : 1)) << "call " << call;
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_NE(r.graphs_off_reason.find("constant 'use_double'"), std::string::npos) << r.graphs_off_reason;
  auto ev = fx.logs.Find("host_constant", "constant", "use_double");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->field("memory"), pinned ? "pinned host memory" : "pageable host memory");
  if (pinned) cudaFreeHost(flag);
}

TEST(ManagerGpuTest, PinnedHostConstantMeansNoGraph) {
  ENCORE_REQUIRE_GPU();
  HostFlagCase(true);
}

TEST(ManagerGpuTest, PageableHostConstantMeansNoGraph) {
  ENCORE_REQUIRE_GPU();
  HostFlagCase(false);
}

TEST(ManagerGpuTest, UnlistedConstantsAreLogged) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 0;
  Fixture fx(f);
  MethodSpec spec = Affine("unlisted", nullptr);
  spec.constants = std::nullopt;
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(8), out(8);
  TensorRef i = F32(in.get(), {8}), o = F32(out.get(), {8});
  ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok());
  auto ev = fx.logs.Find("constants_unlisted", "method", "unlisted");
  ASSERT_TRUE(ev.has_value());
  EXPECT_NE(ev->field("detail").find("constants could not be listed"), std::string::npos);
  EXPECT_EQ((*m)->Report().captures, 1);
}

TEST(ManagerGpuTest, ReleaseThenNewShapeWarmsUpAndCapturesAgain) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 2;
  Fixture fx(f);
  std::atomic<int> runs{0};
  auto m = fx.manager->Register(Affine("f", &runs));
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(64), out(64);
  in.Upload(Iota(64, 0));
  TensorRef a = F32(in.get(), {64}), ao = F32(out.get(), {64});
  for (int k = 0; k < 4; ++k) ASSERT_TRUE((*m)->Run({&a, 1}, {&ao, 1}, fx.stream).ok());
  EXPECT_EQ((*m)->Report().replays, 1);
  ASSERT_TRUE((*m)->Release().ok());
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.phase, MethodPhase::kWarmup);
  EXPECT_TRUE(r.captured_input_shapes.empty());
  EXPECT_EQ(r.memory.reserved_bytes, 0u);
  TensorRef b = F32(in.get(), {32}), bo = F32(out.get(), {32});
  for (int k = 0; k < 4; ++k) {
    out.Fill(kSentinel);
    ASSERT_TRUE((*m)->Run({&b, 1}, {&bo, 1}, fx.stream).ok());
    std::vector<float> got = out.Download();
    EXPECT_EQ(got[31], 63.0f);
    EXPECT_EQ(got[32], kSentinel);
  }
  r = (*m)->Report();
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.warmup_calls, 4);
  EXPECT_EQ(r.replays, 2);
  EXPECT_EQ(r.captured_input_shapes[0][0], (Shape{32}));
}

// A constant that moves (a KV cache grown into a new buffer, the old one
// freed) is handed over with Release(new constants): the freed address is not
// mistaken for host memory and the method keeps its graphs.
TEST(ManagerGpuTest, ReleaseWithMovedConstantsKeepsGraphs) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 0;
  Fixture fx(f);
  auto* cache = new DeviceBuffer<float>(16);
  cache->Fill(1.0f);
  float* cache_ptr = cache->get();
  MethodSpec spec;
  spec.name = "cached";
  spec.constants = std::vector<Constant>{{"kv", cache_ptr, 16 * sizeof(float)}};
  float** current = new float*(cache_ptr);
  spec.fn = [current](Call& c) -> Status {
    cudaError_t e = testing::LaunchAddBroadcast(static_cast<const float*>(c.input(0).data), *current, 16,
                                                static_cast<float*>(c.output(0).data), c.input(0).numel(), c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "LaunchAddBroadcast");
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(16), out(16);
  in.Fill(10.0f);
  TensorRef i = F32(in.get(), {16}), o = F32(out.get(), {16});
  ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok());
  EXPECT_EQ(out.Download()[0], 11.0f);
  // The cache moves: a new buffer, the old one freed.
  auto* bigger = new DeviceBuffer<float>(32);
  bigger->Fill(5.0f);
  *current = bigger->get();
  delete cache;
  Constant bad{"kv", nullptr, 4};
  Status s = (*m)->Release(std::vector<Constant>{bad});
  EXPECT_EQ(s.message(), "method 'cached': constant 0 ('kv') has a null address");
  ASSERT_TRUE((*m)->Release(std::vector<Constant>{{"kv", bigger->get(), 32 * sizeof(float)}}).ok());
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok());
    EXPECT_EQ(out.Download()[0], 15.0f);
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.replays, 2);
  EXPECT_TRUE(r.graphs_off_reason.empty()) << r.graphs_off_reason;
  delete bigger;
  delete current;
}

TEST(ManagerGpuTest, LegacyDefaultStreamIsCapturedOnAnInternalStream) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 1;
  Fixture fx(f);
  auto m = fx.manager->Register(Affine("legacy", nullptr));
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(100), out(100);
  for (int call = 0; call < 5; ++call) {
    in.Upload(Iota(100, static_cast<float>(call)));
    TensorRef i = F32(in.get(), {100}), o = F32(out.get(), {100});
    ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, cudaStreamLegacy).ok());
    // A blocking copy on the legacy stream is ordered after the launch.
    float v = 0;
    ASSERT_EQ(cudaMemcpy(&v, out.get() + 10, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(v, (call + 10.0f) * 2 + 1) << call;
  }
  EXPECT_EQ((*m)->Report().captures, 1);
  EXPECT_EQ((*m)->Report().replays, 3);
  // The literal 0 is the same stream.
  TensorRef i = F32(in.get(), {100}), o = F32(out.get(), {100});
  EXPECT_TRUE((*m)->Run({&i, 1}, {&o, 1}, nullptr).ok());
}

TEST(ManagerGpuTest, CopyOutputsOffExposesStaticOutputs) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 0;
  f.copy_outputs = false;
  Fixture fx(f);
  auto m = fx.manager->Register(Affine("static_out", nullptr));
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(16), out(16);
  out.Fill(kSentinel);
  for (int call = 0; call < 3; ++call) {
    in.Upload(Iota(16, static_cast<float>(call)));
    TensorRef i = F32(in.get(), {16}), o = F32(out.get(), {16});
    ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok());
    MethodReport r = (*m)->Report();
    ASSERT_EQ(r.static_outputs.size(), 1u);
    float v = 0;
    ASSERT_EQ(cudaStreamSynchronize(fx.stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&v, static_cast<float*>(r.static_outputs[0].data) + 4, sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(v, (call + 4.0f) * 2 + 1);
  }
  EXPECT_EQ(out.Download()[0], kSentinel);  // the caller's buffer is not written
  EXPECT_EQ((*m)->Report().graph_nodes, 3u);   // head, affine, record: no output staging node
}

// Another thread's CUDA calls during a capture neither break it nor get
// recorded (thread-local capture mode).
TEST(ManagerGpuTest, OtherThreadsCudaCallsDoNotBreakCapture) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 0;
  Fixture fx(f);
  std::mutex mu;
  std::condition_variable cv;
  bool go = false, done = false;
  cudaError_t other_err = cudaErrorUnknown;
  std::thread other([&] {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return go; });
    void* p = nullptr;
    other_err = cudaMalloc(&p, 1 << 20);
    if (other_err == cudaSuccess) other_err = cudaFree(p);
    done = true;
    cv.notify_all();
  });
  MethodSpec spec = Affine("concurrent_capture", nullptr);
  MethodFn inner = spec.fn;
  spec.fn = [&, inner](Call& c) -> Status {
    if (c.kind() == CallKind::kCapture) {
      std::unique_lock<std::mutex> l(mu);
      go = true;
      cv.notify_all();
      cv.wait(l, [&] { return done; });
    }
    return inner(c);
  };
  auto m = fx.manager->Register(spec);
  ASSERT_TRUE(m.ok());
  DeviceBuffer<float> in(8), out(8);
  in.Upload(Iota(8, 0));
  TensorRef i = F32(in.get(), {8}), o = F32(out.get(), {8});
  ASSERT_TRUE((*m)->Run({&i, 1}, {&o, 1}, fx.stream).ok());
  other.join();
  EXPECT_EQ(other_err, cudaSuccess);
  EXPECT_EQ((*m)->Report().captures, 1);
  EXPECT_EQ((*m)->Report().capture_failures, 0);
  EXPECT_EQ(out.Download()[7], 15.0f);
}

TEST(ManagerGpuTest, TwoMethodsOnTwoThreadsRunConcurrently) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 2;
  Fixture fx(f);
  auto a = fx.manager->Register(Affine("a", nullptr));
  auto b = fx.manager->Register(Affine("b", nullptr));
  ASSERT_TRUE(a.ok() && b.ok());
  std::atomic<int> errors{0};
  auto worker = [&](Method* m, float base) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    DeviceBuffer<float> in(1000), out(1000);
    for (int call = 0; call < 200; ++call) {
      std::vector<float> v(1000, base + call);
      cudaMemcpyAsync(in.get(), v.data(), 4000, cudaMemcpyHostToDevice, s);
      cudaStreamSynchronize(s);
      TensorRef i = F32(in.get(), {1000}), o = F32(out.get(), {1000});
      if (!m->Run({&i, 1}, {&o, 1}, s).ok()) ++errors;
      float got = 0;
      cudaMemcpyAsync(&got, out.get() + 999, 4, cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);
      if (got != (base + call) * 2 + 1) ++errors;
    }
    cudaStreamDestroy(s);
  };
  std::thread t1(worker, *a, 0.0f), t2(worker, *b, 5000.0f);
  t1.join();
  t2.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ((*a)->Report().replays, 197);
  EXPECT_EQ((*b)->Report().replays, 197);
}

TEST(ManagerGpuTest, OneMethodFromTwoThreadsIsSerialized) {
  ENCORE_REQUIRE_GPU();
  MethodFlags f;
  f.warmup_calls = 1;
  Fixture fx(f);
  auto m = fx.manager->Register(Affine("shared", nullptr));
  ASSERT_TRUE(m.ok());
  std::atomic<int> errors{0};
  auto worker = [&](float base) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    DeviceBuffer<float> in(256), out(256);
    for (int call = 0; call < 100; ++call) {
      std::vector<float> v(256, base + call);
      cudaMemcpyAsync(in.get(), v.data(), 1024, cudaMemcpyHostToDevice, s);
      TensorRef i = F32(in.get(), {256}), o = F32(out.get(), {256});
      if (!(*m)->Run({&i, 1}, {&o, 1}, s).ok()) ++errors;
      std::vector<float> got(256);
      cudaMemcpyAsync(got.data(), out.get(), 1024, cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);
      for (float g : got) {
        if (g != (base + call) * 2 + 1) {
          ++errors;
          break;
        }
      }
    }
    cudaStreamDestroy(s);
  };
  std::thread t1(worker, 0.0f), t2(worker, 1000.0f);
  t1.join();
  t2.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ((*m)->Report().calls, 200);
}

// One Method driven on two devices keeps a graph, memory and streams per
// device; each device's calls replay its own graph.
TEST(ManagerGpuTest, OneMethodOnTwoDevicesKeepsAGraphPerDevice) {
  ENCORE_REQUIRE_GPU();
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, " << n << " visible";
  MethodFlags f;
  f.warmup_calls = 1;
  Fixture fx(f);
  auto m = fx.manager->Register(Affine("two_devices", nullptr));
  ASSERT_TRUE(m.ok());
  struct PerDevice {
    cudaStream_t s = nullptr;
    float* in = nullptr;
    float* out = nullptr;
  } d[2];
  constexpr int64_t kLen = 512;
  for (int dev = 0; dev < 2; ++dev) {
    ASSERT_EQ(cudaSetDevice(dev), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&d[dev].s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d[dev].in, kLen * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d[dev].out, kLen * 4), cudaSuccess);
  }
  for (int call = 0; call < 10; ++call) {
    for (int dev = 0; dev < 2; ++dev) {
      ASSERT_EQ(cudaSetDevice(dev), cudaSuccess);
      std::vector<float> h = Iota(kLen, 1000.0f * dev + call);
      ASSERT_EQ(cudaMemcpy(d[dev].in, h.data(), kLen * 4, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      TensorRef ti = F32(d[dev].in, {kLen}), to = F32(d[dev].out, {kLen});
      ASSERT_TRUE((*m)->Run({&ti, 1}, {&to, 1}, d[dev].s).ok()) << "device " << dev << " call " << call;
      ASSERT_EQ(cudaStreamSynchronize(d[dev].s), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(h.data(), d[dev].out, kLen * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(h[7], (1000.0f * dev + call + 7) * 2 + 1) << "device " << dev << " call " << call;
    }
  }
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.devices, 2);
  EXPECT_EQ(r.captures, 2);   // one per device
  EXPECT_EQ(r.replays, 16);   // 8 per device
  EXPECT_EQ(r.calls, 20);
  ASSERT_TRUE((*m)->Release().ok());
  EXPECT_EQ((*m)->Report().memory.reserved_bytes, 0u);
  for (int dev = 0; dev < 2; ++dev) {
    cudaSetDevice(dev);
    cudaFree(d[dev].in);
    cudaFree(d[dev].out);
    cudaStreamDestroy(d[dev].s);
  }
  cudaSetDevice(0);
}

TEST(ManagerTest, FlagsTextOverridesAndMalformedTextFailsCreate) {
  ManagerOptions o;
  o.flags_text = "f:warmup=x";
  auto bad = Manager::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "flags_text: method flags: bad token 'warmup=x': warmup takes an integer >= 0");
  LogCapture logs;
  o.flags_text = "f:graphs=off;ghost:warmup=1";
  o.logger = logs.logger();
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok());
  MethodFlags code_flags;
  code_flags.warmup_calls = 9;
  MethodSpec spec;
  spec.name = "f";
  spec.flags = code_flags;
  spec.fn = [](Call&) { return OkStatus(); };
  auto f = (*mgr)->Register(spec);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE((*f)->flags().graphs);
  EXPECT_EQ((*f)->flags().warmup_calls, 9);
  EXPECT_EQ((*f)->Report().phase, MethodPhase::kEager);
  // The unknown name is not an error: a hint at the first Run, a warning
  // at the Manager's end (a method may be registered after others ran).
  EXPECT_TRUE((*f)->Run({}, {}, cudaStreamLegacy).ok());
  EXPECT_TRUE(logs.Find("flags_method_not_registered", "method", "ghost").has_value());
  mgr->reset();
  auto w = logs.Find("unknown_method_in_flags", "method", "ghost");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->level, spdlog::level::warn);
}

}  // namespace
}  // namespace encore
