// Binding names in the report: with no reference scan built, every graph is
// staged, and Report() and the log say which check made it so.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "encore/graph/manager.h"
#include "encore/tests/affine_call.h"
#include "encore/tests/device_buffer.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

MethodReport CaptureOnce(Manager& mgr, const std::string& name, Binding binding, cudaStream_t s) {
  MethodSpec spec;
  spec.name = name;
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 0;
  f.binding = binding;
  spec.flags = f;
  spec.fn = [](Call& c) { return testing::AffineCall(c, 2.0f, 0.0f); };
  Method* m = *mgr.Register(spec);
  DeviceBuffer<float> in(16), out(16);
  in.Fill(1.0f);
  TensorRef i{in.get(), DType::kFloat32, {16}, {}}, o{out.get(), DType::kFloat32, {16}, {}};
  EXPECT_TRUE(m->Run({&i, 1}, {&o, 1}, s).ok());
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(out.Download()[3], 2.0f);
  return m->Report();
}

TEST(BindingGpuTest, EveryGraphIsStagedAndSaysWhy) {
  ENCORE_REQUIRE_GPU();
  LogCapture logs;
  ManagerOptions o;
  o.logger = logs.logger();
  auto mgr = *Manager::Create(std::move(o));
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  MethodReport a = CaptureOnce(*mgr, "auto", Binding::kAuto, s);
  EXPECT_EQ(a.captures, 1);
  EXPECT_EQ(a.binding, Binding::kStaged);
  EXPECT_EQ(a.binding_reason.rfind("binding=auto: staged, because this build has no reference scan", 0), 0u)
      << a.binding_reason;
  EXPECT_EQ(a.rebind_sites, 0);
  MethodReport d = CaptureOnce(*mgr, "direct", Binding::kDirect, s);
  EXPECT_EQ(d.binding, Binding::kStaged);
  EXPECT_EQ(d.binding_reason.rfind("binding=direct: staged, because", 0), 0u) << d.binding_reason;
  MethodReport st = CaptureOnce(*mgr, "staged", Binding::kStaged, s);
  EXPECT_EQ(st.binding_reason, "binding=staged in the method's flags");
  EXPECT_EQ(logs.Count("binding"), 2);  // auto and direct, each staged against the request
  EXPECT_NE(mgr->ReportJson().find("\"binding\":\"staged\""), std::string::npos);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace encore
