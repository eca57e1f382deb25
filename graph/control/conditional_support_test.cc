// SPDX-License-Identifier: Apache-2.0
// The decision whether conditional nodes can be built, on any machine: each
// missing piece (headers, runtime, driver) is named with its version, and a
// failed version query through the fault seam is "not supported", naming
// the call.
#include "encore/graph/control/internal/conditional_support.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

TEST(ConditionalSupportTest, VersionsPrintAsCudaWritesThem) {
  EXPECT_EQ(CudaVersionText(12040), "12.4");
  EXPECT_EQ(CudaVersionText(12030), "12.3");
  EXPECT_EQ(CudaVersionText(12090), "12.9");
  EXPECT_EQ(CudaVersionText(13000), "13.0");
  EXPECT_EQ(CudaVersionText(11080), "11.8");
}

TEST(ConditionalSupportTest, TwelveFourEverywhereIsSupported) {
  for (int v : {12040, 12080, 13000, 13020}) {
    ConditionalSupport s = DecideConditionalSupport(v, v, v);
    EXPECT_TRUE(s.supported) << v;
    EXPECT_EQ(s.reason, "") << v;
  }
  EXPECT_TRUE(DecideConditionalSupport(12040, 12040, 13000).supported) << "a newer driver runs an older runtime";
}

TEST(ConditionalSupportTest, AnOldRuntimeIsNamed) {
  ConditionalSupport s = DecideConditionalSupport(12040, 12030, 13000);
  EXPECT_FALSE(s.supported);
  EXPECT_EQ(s.reason, "the CUDA runtime is 12.3; conditional nodes need 12.4");
}

TEST(ConditionalSupportTest, AnOldDriverIsNamed) {
  ConditionalSupport s = DecideConditionalSupport(13000, 13000, 12020);
  EXPECT_FALSE(s.supported);
  EXPECT_EQ(s.reason, "the CUDA driver supports CUDA 12.2; conditional nodes need 12.4");
}

TEST(ConditionalSupportTest, NoDriverIsNamed) {
  ConditionalSupport s = DecideConditionalSupport(13000, 13000, 0);
  EXPECT_FALSE(s.supported);
  EXPECT_EQ(s.reason, "no CUDA driver is installed; conditional nodes need 12.4 or newer");
}

TEST(ConditionalSupportTest, OldHeadersAreNamedFirst) {
  ConditionalSupport s = DecideConditionalSupport(12030, 12030, 12020);
  EXPECT_FALSE(s.supported);
  EXPECT_EQ(s.reason, "encore was built against CUDA 12.3 headers; conditional nodes need 12.4");
}

TEST(ConditionalSupportTest, TheQueryUsesThisBuildsHeadersAndTheSeam) {
  CudaFaultInjector inj;
  ConditionalSupport s = QueryConditionalSupport();
  EXPECT_EQ(inj.Count(CudaCall::kRuntimeGetVersion), 1);
  EXPECT_EQ(inj.Count(CudaCall::kDriverGetVersion), 1);
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  ConditionalSupport want = DecideConditionalSupport(CUDART_VERSION, runtime, driver);
  EXPECT_EQ(s.supported, want.supported);
  EXPECT_EQ(s.reason, want.reason);
}

TEST(ConditionalSupportTest, AFailedQueryIsNotSupportedAndNamesTheCall) {
  CudaFaultInjector inj;
  inj.FailNth(CudaCall::kDriverGetVersion, 1, cudaErrorUnknown);
  ConditionalSupport s = QueryConditionalSupport();
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("cudaDriverGetVersion failed (cudaErrorUnknown)"), std::string::npos) << s.reason;
  inj.FailNth(CudaCall::kRuntimeGetVersion, 1, cudaErrorInsufficientDriver);
  s = QueryConditionalSupport();
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("cudaRuntimeGetVersion failed"), std::string::npos) << s.reason;
}

TEST(ConditionalSupportTest, TheNewCallsHaveTheirRuntimeNamesInTheSeam) {
  EXPECT_EQ(CudaCallName(CudaCall::kGraphAddNode), "cudaGraphAddNode");
  EXPECT_EQ(CudaCallName(CudaCall::kGraphConditionalHandleCreate), "cudaGraphConditionalHandleCreate");
  EXPECT_EQ(CudaCallName(CudaCall::kStreamUpdateCaptureDependencies), "cudaStreamUpdateCaptureDependencies");
  EXPECT_EQ(CudaCallName(CudaCall::kStreamBeginCaptureToGraph), "cudaStreamBeginCaptureToGraph");
  EXPECT_EQ(CudaCallName(CudaCall::kStreamGetCaptureGraph), "cudaStreamGetCaptureInfo");
  EXPECT_EQ(CudaCallName(CudaCall::kDriverGraphNodeGetParams), "cuGraphNodeGetParams");
  EXPECT_EQ(CudaCallFromName("StreamGetCaptureGraph"), CudaCall::kStreamGetCaptureGraph);
  EXPECT_EQ(CudaCallFromName("cudaStreamGetCaptureInfo"), CudaCall::kStreamGetCaptureInfo) << "the older entry first";
}

}  // namespace
}  // namespace encore
