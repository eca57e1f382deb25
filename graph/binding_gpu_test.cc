// SPDX-License-Identifier: Apache-2.0
// Direct binding (MethodFlags::binding): graphs bound to the caller's
// buffers, the references the scan must find (plain, struct, interior,
// memcpy and memset endpoints, CUB's), the ones it cannot (a pointer in two
// halves, one kept in device memory) staged by the scan or the probe, and
// the cases where staging must answer (overlapping tensors, binding=staged).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "encore/core/cuda_api.h"
#include "encore/graph/manager.h"
#include "encore/policy/binding_policy.h"
#include "encore/shims/philox.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/test_kernels.h"
#include "graph/binding_test_kernels.h"

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

std::vector<float> Times2(const std::vector<float>& in) {
  std::vector<float> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] * 2.0f;
  return out;
}

TEST_F(BindingGpuTest, DirectGraphHoldsOnlyTheBodyAndFollowsMovingBuffers) {
  Method* m = Register("direct", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 4, Times2);
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kDirect) << r.binding_reason;
  EXPECT_EQ(r.graph_nodes, 1u);  // the kernel alone: no node of encore's
  EXPECT_EQ(r.rebind_sites, 2);  // in and out
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 11);
  EXPECT_GT(r.exec_variants, 0);  // recurring pairs earned executables
  EXPECT_EQ(logs_.Count("binding"), 1);
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
  EXPECT_NE(f.binding_reason.find("replays brought addresses not seen before"), std::string::npos)
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
  RunMoving(m, 3, [](const std::vector<float>& in) {
    std::vector<float> out(in.size());
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] * 3.0f;
    return out;
  });
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("the probe found a reference the scan could not see"), std::string::npos)
      << r.binding_reason;
  EXPECT_EQ(logs_.Count("binding_probe"), 1);
}

TEST_F(BindingGpuTest, AnInputNoNodeNamesIsStagedByTheScan) {
  // The input's address reaches the kernel only as two 32-bit halves.
  Method* m = Register("unnamed", Binding::kDirect, [](Call& c) {
    float* out = static_cast<float*>(c.output(0).data);
    cudaError_t e = cudaMemsetAsync(out, 0, kN * sizeof(float), c.stream());
    if (e == cudaSuccess) e = testing::LaunchAddFromHalves(static_cast<const float*>(c.input(0).data), out, kN, c.stream());
    return e == cudaSuccess ? OkStatus() : CudaStatus(e, "halves");
  });
  RunMoving(m, 2, [](const std::vector<float>& in) { return in; });
  MethodReport r = m->Report();
  EXPECT_EQ(r.binding, Binding::kStaged);
  EXPECT_NE(r.binding_reason.find("input 0 is referenced by no kernel parameter"), std::string::npos)
      << r.binding_reason;
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

TEST_F(BindingGpuTest, AFailedRewriteIsAnErrorAndTheNextCallIsRight) {
  DeviceBuffer<float> in(kN), out(kN);  // before RunMoving's, so the addresses differ
  Method* m = Register("fault", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
  RunMoving(m, 1, Times2);
  ASSERT_EQ(m->Report().binding, Binding::kDirect);
  in.Fill(5.0f);
  out.Fill(-1.0f);
  TensorRef i{in.get(), DType::kFloat32, {kN}, {}}, o{out.get(), DType::kFloat32, {kN}, {}};
  {
    CudaFaultInjector inject;
    inject.FailNth(CudaCall::kDriverGraphExecKernelNodeSetParams, 1, cudaErrorInvalidValue);
    Status s = m->Run({&i, 1}, {&o, 1}, s_);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("'fault'"), std::string_view::npos) << s.message();
    EXPECT_NE(s.message().find("cuGraphExecKernelNodeSetParams"), std::string_view::npos) << s.message();
  }
  ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
  EXPECT_EQ(out.Download()[0], -1.0f);  // nothing launched
  ASSERT_TRUE(m->Run({&i, 1}, {&o, 1}, s_).ok());
  EXPECT_EQ(out.Download(), std::vector<float>(kN, 10.0f));
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

TEST_F(BindingGpuTest, AParameterListCutShortByAFailureIsNotTakenForTheEnd) {
  // cuFuncGetParamInfo says "invalid value" past the last parameter; one
  // failing that way mid-list must stage the graph, not bind a kernel with
  // fewer arguments than it takes (which crashed the driver at the rewrite).
  CudaFaultInjector inject;
  inject.FailNth(CudaCall::kDriverFuncGetParamInfo, 2, cudaErrorInvalidValue);
  Method* m = Register("cut", Binding::kDirect, [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); });
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

}  // namespace
}  // namespace encore
