#include "encore/core/cuda_error.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace encore
