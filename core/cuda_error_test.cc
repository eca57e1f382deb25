// SPDX-License-Identifier: Apache-2.0
#include "encore/core/cuda_error.h"

#include <gtest/gtest.h>

#include <string>

#include "encore/core/cuda_archs.h"

namespace encore {
namespace {

TEST(CudaErrorTest, MapsToTheMostSpecificCode) {
  EXPECT_EQ(CudaErrorCode(cudaSuccess), StatusCode::kOk);
  EXPECT_EQ(CudaErrorCode(cudaErrorMemoryAllocation), StatusCode::kResourceExhausted);
  EXPECT_EQ(CudaErrorCode(cudaErrorStreamCaptureInvalidated), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaErrorCode(cudaErrorStreamCaptureUnsupported), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaErrorCode(cudaErrorInvalidValue), StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(cudaErrorNoDevice), StatusCode::kUnavailable);
  EXPECT_EQ(CudaErrorCode(cudaErrorAssert), StatusCode::kUnavailable);
  EXPECT_EQ(CudaErrorCode(cudaErrorIllegalAddress), StatusCode::kUnavailable);
  EXPECT_EQ(CudaErrorCode(cudaErrorNotSupported), StatusCode::kUnimplemented);
  EXPECT_EQ(CudaErrorCode(cudaErrorUnknown), StatusCode::kInternal);
}

TEST(CudaErrorTest, ClassifiesCaptureAndContextErrors) {
  EXPECT_TRUE(IsCaptureError(cudaErrorStreamCaptureImplicit));
  EXPECT_TRUE(IsCaptureError(cudaErrorStreamCaptureWrongThread));
  EXPECT_FALSE(IsCaptureError(cudaErrorMemoryAllocation));
  EXPECT_TRUE(IsContextLostError(cudaErrorLaunchFailure));
  EXPECT_FALSE(IsContextLostError(cudaErrorInvalidValue));
}

TEST(CudaErrorTest, MessageNamesApiErrorAndText) {
  Status s = CudaStatus(cudaErrorMemoryAllocation, "cudaMallocAsync", "method 'fwd' scratch of 1024 bytes");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "cudaMallocAsync: cudaErrorMemoryAllocation (out of memory); method 'fwd' scratch of 1024 bytes");
  Status lost = CudaStatus(cudaErrorAssert, "cudaStreamSynchronize");
  EXPECT_EQ(lost.message(),
            "cudaStreamSynchronize: cudaErrorAssert (device-side assert triggered); the CUDA context is "
            "lost for this process");
  EXPECT_TRUE(CudaStatus(cudaSuccess, "x").ok());
}

TEST(CudaErrorTest, MissingKernelImageNamesTheBuiltArchitectures) {
  for (cudaError_t err : {cudaErrorNoKernelImageForDevice, cudaErrorUnsupportedPtxVersion, cudaErrorInvalidPtx}) {
    EXPECT_TRUE(IsMissingKernelImageError(err));
    const std::string message(CudaStatus(err, "cudaLaunchKernel").message());
    EXPECT_NE(message.find("encore's kernels were built for " + std::string(kBuiltCudaArchs) + ": rebuild with"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--@encore//tools:cuda_archs"), std::string::npos) << message;
  }
  EXPECT_FALSE(IsMissingKernelImageError(cudaErrorInvalidValue));
  EXPECT_EQ(CudaStatus(cudaErrorInvalidValue, "x").message().find("built for"), std::string::npos);
}

TEST(CudaErrorTest, BuiltArchitecturesAreMachineCodeOrPtx) {
  // Every entry is sm_NN or compute_NN; at least one.
  std::string archs(kBuiltCudaArchs);
  ASSERT_FALSE(archs.empty());
  size_t start = 0;
  while (start <= archs.size()) {
    size_t end = archs.find(' ', start);
    if (end == std::string::npos) end = archs.size();
    const std::string arch = archs.substr(start, end - start);
    EXPECT_TRUE(arch.rfind("sm_", 0) == 0 || arch.rfind("compute_", 0) == 0) << arch;
    start = end + 1;
  }
}

}  // namespace
}  // namespace encore
