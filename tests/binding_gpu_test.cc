// SPDX-License-Identifier: Apache-2.0
// Direct binding (MethodFlags::binding): graphs bound to the caller's
// buffers, the references the scan must find (plain, struct, interior,
// memcpy and memset endpoints, CUB's), the ones it cannot (a pointer in two
// halves, one kept in device memory) staged by the scan or the probe, the
// cases where staging must answer (overlapping tensors, a rewrite CUDA
// refuses, binding=staged), and the probe itself: its device checks, its
// place in auto's statistics, its rewind failing, and its vote across ranks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/graph/manager.h"
#include "encore/policy/internal/binding_policy.h"
#include "encore/policy/rank_consensus.h"
#include "encore/shims/philox.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/test_kernels.h"
#include "encore/tests/binding_test_kernels.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kN = 64;

class BindingGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ENCORE_REQUIRE_GPU();
    ManagerOptions o;
    o.logger = logs_.logger();
    mgr_ = *Manager::Create(std::move(o));
    ASSERT_EQ(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    mgr_.reset();
    if (s_) cudaStreamDestroy(s_);
  }
  Method* Register(const std::string& name, Binding binding, MethodFn fn,
                   std::vector<Constant> constants = {}) {
    MethodSpec spec;
    spec.name = name;
    spec.constants = std::move(constants);
    MethodFlags f;
    f.warmup_calls = 0;
    f.binding = binding;
    spec.flags = f;
    spec.fn = std::move(fn);
    return *mgr_->Register(std::move(spec));
  }
  // Runs `m` on fresh buffers holding 1..kN (times `scale`), `calls` times,
  // a new buffer pair each call and then the first pairs again, and checks
  // each output with `expect(input)`.
  void RunMoving(Method* m, int pairs, const std::function<std::vector<float>(const std::vector<float>&)>& expect) {
    std::vector<std::unique_ptr<DeviceBuffer<float>>> ins, outs;
    for (int p = 0; p < pairs; ++p) {
      ins.push_back(std::make_unique<DeviceBuffer<float>>(kN));
      outs.push_back(std::make_unique<DeviceBuffer<float>>(kN));
      std::vector<float> v(kN);
      for (int64_t i = 0; i < kN; ++i) v[i] = float(i + 1) * float(p + 1);
      ins.back()->Upload(v);
    }
    for (int round = 0; round < 3; ++round) {
      for (int p = 0; p < pairs; ++p) {
        outs[p]->Fill(-7.0f);
        TensorRef i{ins[p]->get(), DType::kFloat32, {kN}, {}}, o{outs[p]->get(), DType::kFloat32, {kN}, {}};
        ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, s_).ok()) << "round " << round << " pair " << p;
        ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
        EXPECT_EQ(outs[p]->Download(), expect(ins[p]->Download())) << "round " << round << " pair " << p;
      }
    }
  }

  LogCapture logs_;
  std::unique_ptr<Manager> mgr_;
  cudaStream_t s_ = nullptr;
};

std::vector<float> Scaled(const std::vector<float>& in, float a) {
  std::vector<float> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] * a;
  return out;
}
std::vector<float> Times2(const std::vector<float>& in) { return Scaled(in, 2.0f); }
// The affine kernel's in * 2 plus the halves kernel's in.
std::vector<float> Times3(const std::vector<float>& in) { return Scaled(in, 3.0f); }

TEST_F(BindingGpuTest, DirectGraphHoldsOnlyTheBodyAndFollowsMovingBuffers) {
  Method* m = Register("direct", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 4, Times2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.graph_nodes, 2u);  // the kernel and the completion record
  EXPECT_EQ(r.rebind_sites, 2);  // in and out
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 11);
  EXPECT_GT(r.exec_variants, 0);  // recurring pairs earned executables
  EXPECT_EQ(logs_.Count("binding"), 1);
}

// The capture's first launch runs the direct form's executable between the
// staged heads and tails: the staged graph is not instantiated until a call
// needs it (here, tensors that overlap).
TEST_F(BindingGpuTest, ADirectCaptureInstantiatesTheDirectFormOnly) {
  Method* m = Register("once", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  DeviceBuffer<float> in(kN), out(kN);
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = float(i + 1);
  in.Upload(v);
  out.Fill(-7.0f);
  TensorRef ti{in.get(), DType::kFloat32, {kN}, {}}, to{out.get(), DType::kFloat32, {kN}, {}};
  {
    CudaFaultInjector inj;
    ASSERT_TRUE(m->Run({&ti, 1}, {&to, 1}, s_).ok());
    EXPECT_EQ(inj.Count(CudaCall::kGraphInstantiate), 1);
  }
  ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
  EXPECT_EQ(out.Download(), Times2(v));
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.instantiations, 1);
  // An output over the input's second half: the direct form declines, and
  // the staged graph, instantiated now, answers.
  DeviceBuffer<float> both(2 * kN);
  std::vector<float> w(2 * kN, 0.0f);
  std::copy(v.begin(), v.end(), w.begin());
  both.Upload(w);
  TensorRef over_in{both.get(), DType::kFloat32, {kN}, {}};
  TensorRef over_out{static_cast<float*>(both.get()) + kN / 2, DType::kFloat32, {kN}, {}};
  ASSERT_TRUE(m->Run({&over_in, 1}, {&over_out, 1}, s_).ok());
  ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
  std::vector<float> got = both.Download();
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[kN / 2 + i], 2.0f * float(i + 1)) << "element " << i;
  EXPECT_EQ(m->Report().replays, 1);
  EXPECT_GE(m->Report().exec_variants, 1);
}

TEST_F(BindingGpuTest, AutoBindsASmallGraphDirectly) {
  Method* m = Register("auto", Binding::kAuto, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 2, Times2);
  EXPECT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
}

// out = in * 2 + 20, in 21 nodes that all name the output.
Status AffineThen20Increments(Call& c) {
  ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 2.0f, 0.0f));
  cudaError_t e = testing::LaunchIncrementK(static_cast<float*>(c.output(0).data), kN, 20, c.stream());
  return e == cudaSuccess ? OkStatus() : CudaStatus(e, "increment");
}

TEST_F(BindingGpuTest, AutoStagesAManyNodeGraphOnceItsAddressesProveNotToRecur) {
  Method* fresh = Register("fresh", Binding::kAuto, AffineThen20Increments);
  Method* rotated = Register("rotated", Binding::kAuto, AffineThen20Increments);
  // `fresh` gets new buffers every call; `rotated` cycles through two.
  DeviceBuffer<float> rin[2] = {DeviceBuffer<float>(kN), DeviceBuffer<float>(kN)};
  DeviceBuffer<float> rout[2] = {DeviceBuffer<float>(kN), DeviceBuffer<float>(kN)};
  // Kept alive, so no two calls of `fresh` get the same addresses.
  std::vector<std::unique_ptr<DeviceBuffer<float>>> keep;
  for (int call = 0; call < kAutoRejudgeAfter + 8; ++call) {
    keep.push_back(std::make_unique<DeviceBuffer<float>>(kN));
    DeviceBuffer<float>& in = *keep.back();
    keep.push_back(std::make_unique<DeviceBuffer<float>>(kN));
    DeviceBuffer<float>& out = *keep.back();
    in.Fill(float(call));
    rin[call % 2].Fill(float(call));
    for (auto [m, i_buf, o_buf] : {std::tuple{fresh, &in, &out}, std::tuple{rotated, &rin[call % 2], &rout[call % 2]}}) {
      TensorRef i{i_buf->get(), DType::kFloat32, {kN}, {}}, o{o_buf->get(), DType::kFloat32, {kN}, {}};
      ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, s_).ok());
      ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
      ASSERT_EQ(o_buf->Download(), std::vector<float>(kN, float(call) * 2.0f + 20.0f)) << m->name() << " " << call;
    }
    if (call == 0) {
      EXPECT_EQ(fresh->Report().binding, Binding::kDirect) << fresh->Report().binding_reason;
      EXPECT_EQ(fresh->Report().rebind_sites, 22);
    }
  }
  MethodReport f = fresh->Report();
  EXPECT_EQ(f.binding, Binding::kStaged);
  EXPECT_NE(f.binding_reason.find("would rewrite 21 nodes"), std::string::npos) << f.binding_reason;
  EXPECT_NE(f.binding_reason.find("replays had to rewrite an executable"), std::string::npos)
      << f.binding_reason;
  EXPECT_EQ(rotated->Report().binding, Binding::kDirect) << rotated->Report().binding_reason;
}

TEST_F(BindingGpuTest, StagedWhenAskedKeepsTheStagingNodes) {
  Method* m = Register("staged", Binding::kStaged, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 2, Times2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_EQ(r.binding_reason, "binding=staged in the method's flags");
  EXPECT_EQ(r.graph_nodes, 4u);  // head, kernel, tail, record
  EXPECT_EQ(r.rebind_sites, 0);
}

TEST_F(BindingGpuTest, UnlistedConstantsStageAndSayWhy) {
  MethodSpec spec;
  spec.name = "unlisted";
  MethodFlags f;
  f.warmup_calls = 0;
  spec.flags = f;
  spec.fn = [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); };
  Method* m = *mgr_->Register(std::move(spec));
  RunMoving(m, 2, Times2);
  EXPECT_EQ(m->Report().binding, Binding::kStaged);
  EXPECT_NE(m->Report().binding_reason.find("cannot list its constants"), std::string::npos);
}

TEST_F(BindingGpuTest, StructInteriorMemcpyAndMemsetReferencesAreAllRebound) {
  // out = in (memcpy); out[8..12) = 0 (memset); out[16..) = in[16..) * 3
  // through a struct argument holding interior pointers.
  Method* m = Register("forms", Binding::kDirect, [](Call& c) {
    const float* in = static_cast<const float*>(c.input(0).data);
    float* out = static_cast<float*>(c.output(0).data);
    if (cudaMemcpyAsync(out, in, kN * sizeof(float), cudaMemcpyDeviceToDevice, c.stream()) != cudaSuccess ||
        cudaMemsetAsync(out + 8, 0, 4 * sizeof(float), c.stream()) != cudaSuccess) {
      return InternalError("copy");
    }
    cudaError_t e = testing::LaunchStructAffine({in + 16, out + 16, kN - 16, 3.0f}, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "struct");
  });
  RunMoving(m, 3, [](const std::vector<float>& in) {
    std::vector<float> out = in;
    for (int i = 8; i < 12; ++i) out[i] = 0.0f;
    for (int64_t i = 16; i < kN; ++i) out[i] = in[i] * 3.0f;
    return out;
  });
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.rebind_sites, 5);  // memcpy src+dst, memset dst, struct in+out
}

TEST_F(BindingGpuTest, APointerInTwoHalvesIsCaughtByTheProbeAndStaged) {
  // The input is also passed plainly, so the scan finds a reference to it
  // and only the probe can tell that a kernel reaches it another way.
  Method* m = Register("halves", Binding::kDirect, [](Call& c) {
    const float* in = static_cast<const float*>(c.input(0).data);
    float* out = static_cast<float*>(c.output(0).data);
    Status s = testing::AffineCall(c, 2.0f, 0.0f);
    cudaError_t e = testing::LaunchAddFromHalves(in, out, kN, c.stream());
    return !s.ok() ? s : e == cudaSuccess ? OkStatus() : CudaStatus(e, "halves");
  });
  RunMoving(m, 3, Times3);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("the probe found a reference the scan could not see"), std::string::npos)
      << r.binding_reason;
  EXPECT_EQ(logs_.Count("binding_probe"), 1);
}

TEST_F(BindingGpuTest, AnInputNoNodeNamesIsCopiedInByTheDirectForm) {
  // The input's address reaches the kernel only as two 32-bit halves, so
  // the kernel reads the static buffer the capture ran on: the direct form
  // copies each call's input there first (Note [Inputs no node names]), and
  // every moving call's result is right.
  Method* m = Register("unnamed", Binding::kDirect, [](Call& c) {
    float* out = static_cast<float*>(c.output(0).data);
    cudaError_t e = cudaMemsetAsync(out, 0, kN * sizeof(float), c.stream());
    if (e == cudaSuccess) e = testing::LaunchAddFromHalves(static_cast<const float*>(c.input(0).data), out, kN, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "halves");
  });
  RunMoving(m, 2, [](const std::vector<float>& in) { return in; });
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.rebind_sites, 3);  // the output in the memset and the kernel, the input in its copy
}

// A piece after an eager stage writes an output only through a pointer no
// parameter word holds. Bound directly it would write encore's static
// buffer on every replay and leave the caller's output as it was; the
// probe, which keeps a later piece's outputs as the earlier stages left
// them, sees no difference in the outputs when the output already held the
// answer, but finds the poison in that static buffer overwritten, and
// stages the piece (its tails copy the buffer out). The first piece, which
// names no node of output 1 either, writes nothing hidden: direct.
TEST_F(BindingGpuTest, APieceWritingAnOutputNoNodeNamesIsStaged) {
  MethodSpec spec;
  spec.name = "hidden_output";
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 0;
  spec.flags = f;
  spec.stages = {
      {"first", [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); }},
      {"host", [](Call&) { return OkStatus(); }, /*eager=*/true},
      {"second",
       [](Call& c) {
         cudaError_t e = testing::LaunchCopyToHalves(static_cast<const float*>(c.input(0).data),
                                                     static_cast<float*>(c.output(1).data), kN, c.stream());
         return e == cudaSuccess ? OkStatus() : CudaStatus(e, "copy to halves");
       }},
  };
  auto m = mgr_->Register(std::move(spec));
  ASSERT_TRUE(m.ok()) << m.status();
  DeviceBuffer<float> in(kN), out0(kN), out1(kN);
  for (int call = 1; call <= 4; ++call) {
    std::vector<float> v(kN);
    for (int64_t i = 0; i < kN; ++i) v[i] = float(i + 1) * float(call);
    in.Upload(v);
    if (call == 1) out1.Upload(v);  // already the answer at the capture: the probe alone could not tell
    TensorRef ti{in.get(), DType::kFloat32, {kN}, {}};
    TensorRef outs[] = {{out0.get(), DType::kFloat32, {kN}, {}}, {out1.get(), DType::kFloat32, {kN}, {}}};
    ASSERT_TRUE((*m)->Run({&ti, 1}, outs, s_).ok()) << "call " << call;
    ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    EXPECT_EQ(out0.Download(), Times2(v)) << "call " << call;
    EXPECT_EQ(out1.Download(), v) << "call " << call;
  }
  MethodReport r = (*m)->Report();
  ASSERT_EQ(r.pieces.size(), 2u);
  EXPECT_TRUE(r.pieces[1].graphed);
  EXPECT_NE(r.pieces[1].reason.find("wrote encore's own buffer of output 1 (byte 0: graph "), std::string::npos)
      << r.pieces[1].reason;
  EXPECT_NE(r.pieces[0].reason.find("direct: every reference found"), std::string::npos) << r.pieces[0].reason;
  EXPECT_EQ(r.replays, 3);
}

TEST_F(BindingGpuTest, TheProbeAppliesWritesToConstantsOnce) {
  DeviceBuffer<int> counter(1);
  counter.Upload({0});
  Method* m = Register(
      "counts", Binding::kDirect,
      [&](Call& c) {
        cudaError_t e = testing::LaunchBump(counter.get(), c.stream());
        return e == cudaSuccess ? testing::AffineCall(c, 2.0f, 0.0f) : CudaStatus(e, "bump");
      },
      {Constant{"counter", counter.get(), sizeof(int)}});
  RunMoving(m, 2, Times2);
  EXPECT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
  EXPECT_EQ(counter.Download()[0], 6);  // 3 rounds of 2 calls, each counted once
}

TEST_F(BindingGpuTest, OverlappingTensorsAreAnsweredByTheStagedGraph) {
  Method* m = Register("shift", Binding::kDirect, [](Call& c) {
    cudaError_t e = testing::LaunchShiftRight(static_cast<const float*>(c.input(0).data),
                                              static_cast<float*>(c.output(0).data), kN, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "shift");
  });
  auto shifted = [](const std::vector<float>& in) {
    std::vector<float> out(in.size(), 0.0f);
    for (size_t i = 1; i < in.size(); ++i) out[i] = in[i - 1];
    return out;
  };
  RunMoving(m, 2, shifted);
  ASSERT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
  // In place: staging copies the input first, so the answer is the shift
  // of the original, as it is for every other call.
  DeviceBuffer<float> buf(kN);
  std::vector<float> v(kN);
  std::iota(v.begin(), v.end(), 1.0f);
  buf.Upload(v);
  TensorRef t{buf.get(), DType::kFloat32, {kN}, {}};
  ASSERT_TRUE(m->Run({&t, 1}, {&t, 1}, s_).ok());
  ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
  EXPECT_EQ(buf.Download(), shifted(v));
}

TEST_F(BindingGpuTest, CubAndPhiloxBindDirectlyAndVerify) {
  auto gen = std::make_shared<shims::Philox>(*shims::Philox::Create(1234));
  DeviceBuffer<float> warm(4);
  ASSERT_TRUE(gen->Uniform(warm.get(), 4, s_).ok());  // sets the generator up outside the capture
  MethodSpec spec;
  spec.name = "cub_philox";
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 1;
  f.binding = Binding::kDirect;
  f.verify = 20;  // every launch checked against an eager re-run
  spec.flags = f;
  spec.fn = [gen](Call& c) -> Status {
    const float* in = static_cast<const float*>(c.input(0).data);
    float* noise = static_cast<float*>(c.output(0).data);
    float* sum = static_cast<float*>(c.output(1).data);
    ENCORE_RETURN_IF_ERROR(gen->Uniform(noise, kN, c.stream()));
    size_t bytes = 0;
    if (testing::CubSum(in, sum, kN, nullptr, &bytes, c.stream()) != cudaSuccess) return InternalError("cub size");
    ENCORE_ASSIGN_OR_RETURN(void* temp, c.Allocate(bytes));
    cudaError_t e = testing::CubSum(in, sum, kN, temp, &bytes, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "cub");
  };
  Method* m = *mgr_->Register(std::move(spec));
  for (int call = 0; call < 8; ++call) {
    DeviceBuffer<float> in(kN), noise(kN), sum(1);
    std::vector<float> v(kN, float(call + 1));
    in.Upload(v);
    TensorRef i{in.get(), DType::kFloat32, {kN}, {}};
    TensorRef o[2] = {{noise.get(), DType::kFloat32, {kN}, {}}, {sum.get(), DType::kFloat32, {1}, {}}};
    ASSERT_TRUE(m->Run({&i, 1}, {o, 2}, s_).ok());
    ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    EXPECT_EQ(sum.Download()[0], float(kN * (call + 1))) << "call " << call;
    std::vector<float> n = noise.Download();
    EXPECT_TRUE(n[0] >= 0.0f && n[0] < 1.0f && n[0] != n[1]) << "call " << call;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.verify_failures, 0);
  EXPECT_EQ(r.verified_launches, 7);  // the capture launch and 6 replays
  EXPECT_EQ(r.phase, MethodPhase::kReplay);
}

TEST_F(BindingGpuTest, ARefusedRewriteIsAnsweredByTheStagedGraph) {
  DeviceBuffer<float> in(kN), out(kN);  // before RunMoving's, so the addresses differ
  Method* m = Register("fault", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 1, Times2);
  ASSERT_EQ(m->Report().binding, Binding::kDirect);
  in.Fill(5.0f);
  TensorRef i{in.get(), DType::kFloat32, {kN}, {}}, o{out.get(), DType::kFloat32, {kN}, {}};
  {
    CudaFaultInjector inject;
    // As CUDA refuses a memcpy endpoint in pinned-host or managed memory.
    inject.FailNth(CudaCall::kDriverGraphExecKernelNodeSetParams, 1, cudaErrorInvalidValue);
    for (int call = 0; call < 2; ++call) {
      out.Fill(-1.0f);
      Status s = m->Run({&i, 1}, {&o, 1}, s_);
      ASSERT_TRUE(s.ok()) << "call " << call << ": " << s;
      ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
      EXPECT_EQ(out.Download(), std::vector<float>(kN, 10.0f)) << "call " << call;
    }
    // The second call went to the staged graph without asking CUDA again.
    EXPECT_EQ(inject.Count(CudaCall::kDriverGraphExecKernelNodeSetParams), 1);
  }
  EXPECT_EQ(logs_.Count("direct_rewrite_refused"), 1);
  EXPECT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
  RunMoving(m, 2, Times2);  // other addresses still bind directly
}

TEST_F(BindingGpuTest, AnExecutableWhoseRewriteWasRefusedPartWayIsNeverLaunchedAsBound) {
  // out = in * 2 + 20 in 21 kernel nodes that all name the output: a
  // refusal at the second node leaves the first naming the new buffers.
  DeviceBuffer<float> a_in(kN), a_out(kN), b_in(kN), b_out(kN);
  Method* m = Register("partial", Binding::kDirect, AffineThen20Increments);
  auto run = [&](DeviceBuffer<float>& in, DeviceBuffer<float>& out) {
    TensorRef i{in.get(), DType::kFloat32, {kN}, {}}, o{out.get(), DType::kFloat32, {kN}, {}};
    Status s = m->Run({&i, 1}, {&o, 1}, s_);
    EXPECT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    return s;
  };
  a_in.Fill(1.0f);
  b_in.Fill(2.0f);
  ASSERT_TRUE(run(a_in, a_out).ok());  // the capture
  ASSERT_TRUE(run(a_in, a_out).ok());  // the executable now bound to a's buffers
  ASSERT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
  a_out.Fill(-1.0f);
  b_out.Fill(-1.0f);
  {
    CudaFaultInjector inject;
    inject.FailNth(CudaCall::kDriverGraphExecKernelNodeSetParams, 2, cudaErrorInvalidValue);
    ASSERT_TRUE(run(b_in, b_out).ok());
    EXPECT_EQ(inject.Failed(CudaCall::kDriverGraphExecKernelNodeSetParams), 1);
  }
  EXPECT_EQ(b_out.Download(), std::vector<float>(kN, 24.0f));  // answered by the staged graph
  EXPECT_EQ(a_out.Download(), std::vector<float>(kN, -1.0f));  // the caller's other data untouched
  // Back to a's buffers: an executable still taken for a's would run its
  // first node on b's.
  a_in.Fill(3.0f);
  ASSERT_TRUE(run(a_in, a_out).ok());
  EXPECT_EQ(a_out.Download(), std::vector<float>(kN, 26.0f));
  EXPECT_EQ(b_out.Download(), std::vector<float>(kN, 24.0f));
}

TEST_F(BindingGpuTest, APinnedHostOrManagedTensorGetsTheRightResult) {
  // A memcpy node's endpoint moved to host or managed memory: CUDA may
  // refuse the rewrite, and the staged graph then answers.
  Method* m = Register("copy", Binding::kDirect, [](Call& c) {
    cudaError_t e = cudaMemcpyAsync(c.output(0).data, c.input(0).data, kN * sizeof(float), cudaMemcpyDeviceToDevice,
                                    c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "copy");
  });
  RunMoving(m, 2, [](const std::vector<float>& in) { return in; });
  ASSERT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
  float* pinned = nullptr;
  float* managed = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, kN * sizeof(float)), cudaSuccess);
  DeviceBuffer<float> dev_in(kN), dev_out(kN);
  std::vector<float> v(kN);
  std::iota(v.begin(), v.end(), 1.0f);
  dev_in.Upload(v);
  for (float* host : {pinned, managed}) {
    for (bool host_is_input : {true, false}) {
      if (host_is_input) std::copy(v.begin(), v.end(), host);
      if (!host_is_input) std::fill(host, host + kN, -1.0f);
      dev_out.Fill(-1.0f);
      TensorRef i{host_is_input ? host : dev_in.get(), DType::kFloat32, {kN}, {}};
      TensorRef o{host_is_input ? dev_out.get() : host, DType::kFloat32, {kN}, {}};
      Status s = m->Run({&i, 1}, {&o, 1}, s_);
      ASSERT_TRUE(s.ok()) << (host == pinned ? "pinned " : "managed ") << host_is_input << ": " << s;
      ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
      std::vector<float> got = host_is_input ? dev_out.Download() : std::vector<float>(host, host + kN);
      EXPECT_EQ(got, v) << (host == pinned ? "pinned " : "managed ") << host_is_input;
    }
  }
  EXPECT_LE(logs_.Count("direct_rewrite_refused"), 1);
  cudaFreeHost(pinned);
  cudaFree(managed);
}

TEST_F(BindingGpuTest, AGraphWithMemoryNodesIsStagedWithoutAskingCudaToCloneOrInstantiateItTwice) {
  // cudaMallocAsync and cudaFreeAsync in the body are captured as memory
  // nodes: CUDA clones no such graph and lets it have one executable at a
  // time, so the scan stages it before any clone is asked for, and moving
  // buffers rewrite the one staged executable.
  Method* m = Register("memory_nodes", Binding::kDirect, [](Call& c) {
    constexpr size_t kBytes = kN * sizeof(float);
    void* tmp = nullptr;
    cudaError_t e = cudaMallocAsync(&tmp, kBytes, c.stream());
    if (e == cudaSuccess) e = cudaMemcpyAsync(tmp, c.input(0).data, kBytes, cudaMemcpyDeviceToDevice, c.stream());
    if (e == cudaSuccess) e = cudaMemcpyAsync(c.output(0).data, tmp, kBytes, cudaMemcpyDeviceToDevice, c.stream());
    if (tmp != nullptr) {
      const cudaError_t f = cudaFreeAsync(tmp, c.stream());
      if (e == cudaSuccess) e = f;
    }
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "through memory of the graph's own");
  });
  CudaFaultInjector inject;
  RunMoving(m, 3, [](const std::vector<float>& in) { return in; });
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("memory allocation or free nodes"), std::string::npos) << r.binding_reason;
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(inject.Count(CudaCall::kGraphClone), 0);
  EXPECT_EQ(inject.Count(CudaCall::kGraphInstantiate), 1) << "one executable, rewritten for every pair";
}

TEST_F(BindingGpuTest, AFailedScanStagesWithTheCallNamed) {
  CudaFaultInjector inject;
  inject.FailNth(CudaCall::kDriverGraphKernelNodeGetParams, 1, cudaErrorNotSupported);
  Method* m = Register("scanfault", Binding::kAuto, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 2, Times2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("cuGraphKernelNodeGetParams"), std::string::npos) << r.binding_reason;
}

TEST_F(BindingGpuTest, TheProbeUploadsItsRewrittenExecutableWhileTheFirstLaunchRuns) {
  // The probe's run would otherwise pay the upload of every rewritten node
  // on the host after the wait (capture_bench's probe_run).
  CudaFaultInjector inject;
  Method* m = Register("upload", Binding::kAuto, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 1, Times2);
  EXPECT_EQ(inject.Count(CudaCall::kGraphUpload), 1);
  EXPECT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
}

TEST_F(BindingGpuTest, AFailedUploadStagesWithTheCallNamedAndEveryResultRight) {
  CudaFaultInjector inject;
  inject.FailNth(CudaCall::kGraphUpload, 1, cudaErrorInvalidValue);
  Method* m = Register("uploadfault", Binding::kAuto, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 2, Times2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("cudaGraphUpload: cudaErrorInvalidValue"), std::string::npos) << r.binding_reason;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(BindingGpuTest, AParameterListCutShortByAFailureIsNotTakenForTheEnd) {
  // cuFuncGetParamInfo says "invalid value" past the last parameter; one
  // failing that way mid-list must stage the graph, not bind a kernel with
  // fewer arguments than it takes (which crashed the driver at the rewrite).
  CudaFaultInjector inject;
  inject.FailNth(CudaCall::kDriverFuncGetParamInfo, 2, cudaErrorInvalidValue);
  Method* m = Register("cut", Binding::kDirect, [](Call& c) {
    cudaError_t e = testing::LaunchDoubleOnlyHere(static_cast<const float*>(c.input(0).data),
                                                  static_cast<float*>(c.output(0).data), c.input(0).numel(), c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "double");
  });
  RunMoving(m, 3, Times2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("cuFuncGetParamInfo: cudaErrorInvalidValue"), std::string::npos)
      << r.binding_reason;
}

TEST_F(BindingGpuTest, ACallOnAnotherStreamWaitsForTheLastDirectLaunchWhoseStreamIsGone) {
  // A direct graph records no completion event. The body copies its input
  // into scratch at once and, 2 ms later, the scratch into its output: a
  // launch on another stream that did not wait would overwrite the scratch
  // before the first launch read it.
  Method* m = Register("streams", Binding::kDirect, [](Call& c) -> Status {
    ENCORE_ASSIGN_OR_RETURN(void* scratch, c.Allocate(kN * sizeof(float)));
    float* t = static_cast<float*>(scratch);
    cudaError_t e = testing::LaunchSlowCopy(static_cast<const float*>(c.input(0).data), t, kN, 0, c.stream());
    if (e == cudaSuccess) {
      e = testing::LaunchSlowCopy(t, static_cast<float*>(c.output(0).data), kN, 2'000'000, c.stream());
    }
    return CudaStatus(e, "slow copy");
  });
  constexpr int kCalls = 6;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> ins, outs;
  for (int i = 0; i < kCalls; ++i) {
    ins.push_back(std::make_unique<DeviceBuffer<float>>(kN));
    outs.push_back(std::make_unique<DeviceBuffer<float>>(kN));
    ins.back()->Upload(std::vector<float>(kN, float(i + 1)));
    outs.back()->Fill(-1.0f);
  }
  auto run = [&](int i, cudaStream_t s) {
    TensorRef in{ins[i]->get(), DType::kFloat32, {kN}, {}}, out{outs[i]->get(), DType::kFloat32, {kN}, {}};
    return m->Run({&in, 1}, {&out, 1}, s);
  };
  cudaStream_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_TRUE(run(0, a).ok());  // the capture
  ASSERT_TRUE(run(1, a).ok());  // a direct replay, still running when
  ASSERT_EQ(cudaStreamDestroy(a), cudaSuccess);  // its stream goes
  ASSERT_TRUE(run(2, b).ok());
  // From now on calls change streams every time, without a sync between.
  for (int i = 3; i < kCalls; ++i) ASSERT_TRUE(run(i, i % 2 ? c : b).ok()) << i;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(outs[i]->Download(), std::vector<float>(kN, float(i + 1))) << "call " << i;
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.replays, kCalls - 1);
  cudaStreamDestroy(b);
  cudaStreamDestroy(c);
}

// out = in * 2, then a check that every input is positive, read through a
// pointer in two halves: the scan cannot see it, and only the check reads it.
Status CheckedThroughHalves(Call& c) {
  ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 2.0f, 0.0f));
  ENCORE_ASSIGN_OR_RETURN(void* scratch, c.Allocate(kN * sizeof(float) + sizeof(bool)));
  const float* in = static_cast<const float*>(c.input(0).data);
  float* copy = static_cast<float*>(scratch);
  bool* all_positive = reinterpret_cast<bool*>(copy + kN);
  cudaError_t e = cudaMemsetAsync(copy, 0, kN * sizeof(float), c.stream());
  if (e == cudaSuccess) e = testing::LaunchAddFromHalves(in, copy, kN, c.stream());
  if (e == cudaSuccess) e = testing::LaunchAllPositive(copy, kN, all_positive, c.stream());
  if (e != cudaSuccess) return CudaStatus(e, "checked");
  return c.Check(all_positive, "inputs must be positive");
}

TEST_F(BindingGpuTest, ACheckThatFailsOnlyInTheProbeStagesTheGraphAndFailsNoCall) {
  // In the probe the check reads the poisoned static input: its failure is
  // the only sign that the direct form would check stale memory.
  Method* m = Register("hidden_check", Binding::kDirect, CheckedThroughHalves);
  RunMoving(m, 2, Times2);  // every call OK: none reports the probe's check
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("a device check failed in the probe's run ('inputs must be positive')"),
            std::string::npos)
      << r.binding_reason;
  EXPECT_EQ(r.check_failures, 0);
  EXPECT_EQ(logs_.Count("check_failed"), 0);
}

TEST_F(BindingGpuTest, ACheckFailingInAProbeThatDiffersIsNotReportedEither) {
  // out = in * 3 (a third of it read through halves), then a check on the
  // output: in the probe both the output and the check see the poison.
  Method* m = Register("halves_checked", Binding::kDirect, [](Call& c) -> Status {
    float* out = static_cast<float*>(c.output(0).data);
    ENCORE_RETURN_IF_ERROR(testing::AffineCall(c, 2.0f, 0.0f));
    ENCORE_ASSIGN_OR_RETURN(void* flag, c.Allocate(sizeof(bool)));
    cudaError_t e = testing::LaunchAddFromHalves(static_cast<const float*>(c.input(0).data), out, kN, c.stream());
    if (e == cudaSuccess) e = testing::LaunchAllPositive(out, kN, static_cast<bool*>(flag), c.stream());
    if (e != cudaSuccess) return CudaStatus(e, "halves");
    return c.Check(static_cast<const bool*>(flag), "outputs must be positive");
  });
  RunMoving(m, 2, Times3);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("the probe found a reference the scan could not see"), std::string::npos)
      << r.binding_reason;
  EXPECT_EQ(r.check_failures, 0);
}

TEST_F(BindingGpuTest, ChecksThatTrapStageTheGraph) {
  // A check in the probe that read the poison would trap and end the
  // context: such graphs are not probed.
  DeviceBuffer<bool> yes(1);
  const bool one = true;
  ASSERT_EQ(cudaMemcpy(yes.get(), &one, sizeof(bool), cudaMemcpyHostToDevice), cudaSuccess);
  MethodSpec spec;
  spec.name = "trapping";
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 0;
  f.binding = Binding::kDirect;
  f.checks = CheckMode::kTrap;
  spec.flags = f;
  const bool* flag = yes.get();
  spec.fn = [flag](Call& c) -> Status {
    ENCORE_RETURN_IF_ERROR(c.Check(flag, "always true"));
    return testing::AffineCall(c, 2.0f, 0.0f);
  };
  Method* m = *mgr_->Register(std::move(spec));
  RunMoving(m, 2, Times2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("checks=trap"), std::string::npos) << r.binding_reason;
}

TEST_F(BindingGpuTest, TheProbesBindDoesNotCountInAutosAddressStatistics) {
  // binding=auto keeps a many-node graph direct while at most one replay in
  // three has to rewrite an executable (a set seen once). Replays 1..kFresh bring new
  // buffers each, later ones repeat the last: kFresh new sets in the first
  // kAutoRejudgeAfter replays, the most that still recur. Counted, the
  // probe's bind (encore's snapshots) made one more.
  constexpr int kFresh = static_cast<int>(kAutoRejudgeAfter / 3);
  ASSERT_TRUE(AddressesRecur(kAutoRejudgeAfter, kFresh));
  ASSERT_FALSE(AddressesRecur(kAutoRejudgeAfter, kFresh + 1));
  // Every buffer exists before the capture, so none can take the address of
  // the probe's snapshots (which would make its first replay no rewrite).
  std::vector<std::unique_ptr<DeviceBuffer<float>>> ins, outs;
  for (int k = 0; k <= kFresh; ++k) {
    ins.push_back(std::make_unique<DeviceBuffer<float>>(kN));
    outs.push_back(std::make_unique<DeviceBuffer<float>>(kN));
    ins.back()->Fill(float(k));
  }
  Method* m = Register("judged", Binding::kAuto, AffineThen20Increments);
  for (int call = 0; call <= kAutoRejudgeAfter + 4; ++call) {
    const int k = std::min(call, kFresh);
    TensorRef i{ins[k]->get(), DType::kFloat32, {kN}, {}}, o{outs[k]->get(), DType::kFloat32, {kN}, {}};
    ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, s_).ok()) << "call " << call;
    ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    ASSERT_EQ(outs[k]->Download(), std::vector<float>(kN, float(k) * 2.0f + 20.0f)) << "call " << call;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.replays, kAutoRejudgeAfter + 4);
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
}

TEST_F(BindingGpuTest, AProbeWhoseCopiesFailLeavesTheConstantsAsTheCallLeftThem) {
  // Every copy of a capture call fails in turn (the probe's snapshots, the
  // constant guard's uploads and read-backs, its rewind): whichever fails,
  // the call's result is right and its write to the counter is applied
  // exactly once, now and on the next call.
  DeviceBuffer<int> counter(1);
  auto body = [&](Call& c) {
    cudaError_t e = testing::LaunchBump(counter.get(), c.stream());
    return e == cudaSuccess ? testing::AffineCall(c, 2.0f, 0.0f) : CudaStatus(e, "bump");
  };
  DeviceBuffer<float> in(kN), out(kN);
  in.Fill(1.0f);
  TensorRef i{in.get(), DType::kFloat32, {kN}, {}}, o{out.get(), DType::kFloat32, {kN}, {}};
  int copies = 0;
  {
    counter.Upload({0});
    Method* clean = Register("clean", Binding::kDirect, body, {Constant{"counter", counter.get(), sizeof(int)}});
    CudaFaultInjector count;
    ASSERT_TRUE(clean->Run({&i, 1}, {&o, 1}, s_).ok());
    copies = count.Count(CudaCall::kMemcpyAsync);
    ASSERT_EQ(clean->Report().binding, Binding::kDirect) << clean->Report().binding_reason;
  }
  ASSERT_GT(copies, 2);
  for (int n = 1; n <= copies; ++n) {
    counter.Upload({100});
    out.Fill(0.0f);
    Method* m = Register("copy_fails_" + std::to_string(n), Binding::kDirect, body,
                         {Constant{"counter", counter.get(), sizeof(int)}});
    {
      CudaFaultInjector inject;
      inject.FailNth(CudaCall::kMemcpyAsync, n, cudaErrorInvalidValue);
      Status st = m->Run({&i, 1}, {&o, 1}, s_);
      EXPECT_TRUE(st.ok()) << "copy " << n << ": " << st;
    }
    ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    EXPECT_EQ(counter.Download()[0], 101) << "copy " << n << " failing applied the call's bump other than once";
    EXPECT_EQ(out.Download(), std::vector<float>(kN, 2.0f)) << "copy " << n;
    ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, s_).ok());
    ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    EXPECT_EQ(counter.Download()[0], 102) << "copy " << n;
  }
}

// Two ranks (threads on one GPU, a Manager each). Rank 1 lists a constant
// too large to snapshot (the body never touches it), so its probe cannot
// start after its capture: no rank may launch the probe, whose collectives
// would wait for rank 1's.
TEST(BindingRanksGpuTest, ARankWhoseProbeCannotStartKeepsEveryRankFromProbing) {
  ENCORE_REQUIRE_GPU();
  ThreadConsensus tc(2, std::chrono::seconds(20));
  DeviceBuffer<float> untouched(1);
  struct Rank {
    MethodReport report;
    std::vector<std::string> errors;
  } ranks[2];
  auto run = [&](int r) {
    LogCapture logs;
    ManagerOptions o;
    o.consensus = tc.Rank(r);
    o.logger = logs.logger();
    auto mgr = Manager::Create(o);
    if (!mgr.ok()) {
      ranks[r].errors.push_back(mgr.status().ToString());
      return;
    }
    MethodSpec spec;
    spec.name = "tp";
    spec.constants = std::vector<Constant>{};
    if (r == 1) spec.constants->push_back({"huge", untouched.get(), size_t{1} << 46});  // 64 TiB, twice
    MethodFlags f;
    f.warmup_calls = 1;
    f.binding = Binding::kDirect;
    spec.flags = f;
    spec.fn = [](Call& c) { return testing::AffineCall(c, 2.0f, 1.0f); };
    Method* m = *(*mgr)->Register(std::move(spec));
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    DeviceBuffer<float> in(kN), out(kN);
    for (int call = 0; call < 5; ++call) {
      in.Fill(float(call + r));
      TensorRef ti{in.get(), DType::kFloat32, {kN}, {}}, to{out.get(), DType::kFloat32, {kN}, {}};
      Status st = m->Run({&ti, 1}, {&to, 1}, s);
      cudaStreamSynchronize(s);
      if (!st.ok()) ranks[r].errors.push_back("call " + std::to_string(call) + ": " + st.ToString());
      if (st.ok() && out.Download() != std::vector<float>(kN, float(call + r) * 2.0f + 1.0f)) {
        ranks[r].errors.push_back("call " + std::to_string(call) + " was wrong");
      }
    }
    ranks[r].report = m->Report();
    cudaStreamDestroy(s);
  };
  const auto start = std::chrono::steady_clock::now();
  std::thread t1(run, 1);
  run(0);
  t1.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15)) << "a rank waited for a vote";
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(ranks[r].errors.empty()) << "rank " << r << ": " << ranks[r].errors.front();
    EXPECT_EQ(ranks[r].report.captures, 1) << r;
    EXPECT_EQ(ranks[r].report.replays, 3) << r;
    EXPECT_EQ(ranks[r].report.binding, Binding::kStaged) << r << ": " << ranks[r].report.binding_reason;
  }
  EXPECT_NE(ranks[1].report.binding_reason.find("the probe could not start"), std::string::npos)
      << ranks[1].report.binding_reason;
  EXPECT_NE(ranks[0].report.binding_reason.find("another rank cannot probe"), std::string::npos)
      << ranks[0].report.binding_reason;
}

TEST_F(BindingGpuTest, FixedBuffersGetAnExecutableThatWasNeverRewritten) {
  // The probe and the first replay rewrite the capture's executable, which
  // then runs slower for good (bench/binding_micro): buffers that come back
  // get a clean executable, also when they are the last call's.
  Method* m = Register("fixed", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  DeviceBuffer<float> in(kN), out(kN);
  in.Fill(3.0f);
  TensorRef i{in.get(), DType::kFloat32, {kN}, {}}, o{out.get(), DType::kFloat32, {kN}, {}};
  for (int call = 0; call < 5; ++call) {
    out.Fill(-1.0f);
    ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, s_).ok()) << call;
    ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    ASSERT_EQ(out.Download(), std::vector<float>(kN, 6.0f)) << call;
  }
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.exec_variants, 1);  // made at the second replay, used from then on
}

TEST_F(BindingGpuTest, ChangingStreamsLeavesAnotherThreadsCaptureIntact) {
  // CUDA refuses a device-wide sync while any thread captures, in any
  // capture mode, and invalidates that capture: a change of stream after a
  // direct launch must wait on an event instead.
  Method* m = Register("switch", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  DeviceBuffer<float> in(kN), out(kN), other(kN);
  in.Fill(1.0f);
  TensorRef i{in.get(), DType::kFloat32, {kN}, {}}, o{out.get(), DType::kFloat32, {kN}, {}};
  cudaStream_t b = nullptr, captured = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&captured, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, s_).ok());  // the capture, before the other thread's
  ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
  std::promise<void> begun, done;
  cudaError_t end_error = cudaErrorUnknown;
  std::thread capturer([&] {
    cudaError_t e = cudaStreamBeginCapture(captured, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) e = testing::LaunchFill(other.get(), 5.0f, kN, captured);
    begun.set_value();
    done.get_future().wait();
    cudaGraph_t g = nullptr;
    end_error = cudaStreamEndCapture(captured, &g);
    if (e != cudaSuccess) end_error = e;
    if (g != nullptr) cudaGraphDestroy(g);
  });
  begun.get_future().wait();
  Status s1 = m->Run({&i, 1}, {&o, 1}, s_);  // direct replay
  Status s2 = m->Run({&i, 1}, {&o, 1}, b);   // another stream: waits on the event
  Status s3 = m->Run({&i, 1}, {&o, 1}, s_);
  done.set_value();
  capturer.join();
  EXPECT_TRUE(s1.ok()) << s1;
  EXPECT_TRUE(s2.ok()) << s2;
  EXPECT_TRUE(s3.ok()) << s3;
  EXPECT_EQ(end_error, cudaSuccess) << cudaGetErrorName(end_error);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out.Download(), std::vector<float>(kN, 2.0f));
  EXPECT_EQ(m->Report().binding, Binding::kDirect) << m->Report().binding_reason;
  cudaStreamDestroy(b);
  cudaStreamDestroy(captured);
}

}  // namespace
}  // namespace encore
