// SPDX-License-Identifier: Apache-2.0
// The fault seam on a CPU machine: calls made through it are counted and the
// planned ones fail without reaching CUDA, so this runs with no GPU.
#include "encore/core/internal/cuda_api.h"

#include <gtest/gtest.h>

#include "encore/core/internal/stream.h"

namespace encore {
namespace {

TEST(CudaApiTest, NamesRoundTrip) {
  EXPECT_EQ(CudaCallName(CudaCall::kGraphLaunch), "cudaGraphLaunch");
  EXPECT_EQ(CudaCallName(CudaCall::kGraphInstantiate), "cudaGraphInstantiateWithFlags");
  EXPECT_EQ(CudaCallFromName("cudaGraphLaunch"), CudaCall::kGraphLaunch);
  EXPECT_EQ(CudaCallFromName("MallocAsync"), CudaCall::kMallocAsync);
  EXPECT_FALSE(CudaCallFromName("cudaNoSuchThing").has_value());
}

TEST(CudaApiTest, RealTableWhenNoInjector) {
  EXPECT_EQ(&cuda(), &RealCudaApi());
  {
    CudaFaultInjector inj;
    EXPECT_NE(&cuda(), &RealCudaApi());
  }
  EXPECT_EQ(&cuda(), &RealCudaApi());
}

TEST(CudaApiTest, FailsTheNthCallOnlyAndCounts) {
  CudaFaultInjector inj;
  inj.FailNth(CudaCall::kGraphLaunch, 2, cudaErrorLaunchFailure);
  // A null exec is invalid, so unfailed calls return an error from CUDA (or
  // "no device" here): never the injected launch failure.
  cudaError_t e1 = cuda().GraphLaunch(nullptr, nullptr);
  cudaError_t e2 = cuda().GraphLaunch(nullptr, nullptr);
  cudaError_t e3 = cuda().GraphLaunch(nullptr, nullptr);
  EXPECT_NE(e1, cudaErrorLaunchFailure);
  EXPECT_EQ(e2, cudaErrorLaunchFailure);
  EXPECT_NE(e3, cudaErrorLaunchFailure);
  EXPECT_EQ(inj.Count(CudaCall::kGraphLaunch), 3);
  EXPECT_EQ(inj.Failed(CudaCall::kGraphLaunch), 1);
  EXPECT_EQ(inj.Count(CudaCall::kGraphInstantiate), 0);
}

TEST(CudaApiTest, FailureFlowsIntoOwnersAsStatus) {
  CudaFaultInjector inj;
  inj.FailNth(CudaCall::kStreamCreateWithFlags, 1, cudaErrorMemoryAllocation);
  StatusOr<Stream> s = Stream::Create();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.status().message().find("cudaStreamCreateWithFlags"), std::string_view::npos);
  inj.FailNth(CudaCall::kEventCreateWithFlags, 1, cudaErrorInvalidValue, 2);
  EXPECT_EQ(Event::Create().status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Event::Create().status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(inj.Failed(CudaCall::kEventCreateWithFlags), 2);
}

}  // namespace
}  // namespace encore
