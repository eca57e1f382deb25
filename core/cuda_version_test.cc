// SPDX-License-Identifier: Apache-2.0
// The CUDA headers a build compiled against are @cuda's (not another
// toolkit's on the include path), and the runtime it linked is the same
// version: tools/cuda12_check.sh builds against CUDA 12's from PyPI on a
// machine whose toolkit is CUDA 13, and says which version it expects.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace encore {
namespace {

TEST(CudaVersionTest, LinkedRuntimeMatchesTheHeaders) {
  int runtime = 0;
  // No driver is needed: the runtime reports its own version.
  ASSERT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  std::printf("CUDART_VERSION %d, linked runtime %d\n", CUDART_VERSION, runtime);
  EXPECT_EQ(runtime, CUDART_VERSION);
  EXPECT_GE(CUDART_VERSION, 12040) << "encore needs CUDA 12.4 or newer";
}

TEST(CudaVersionTest, HeadersAreTheExpectedOnes) {
  // ENCORE_EXPECT_CUDART_VERSION from the environment, else the version the
  // @cuda repository (or CMake's CUDAToolkit) read from its headers.
  const char* from_env = std::getenv("ENCORE_EXPECT_CUDART_VERSION");
  const std::string expected = from_env != nullptr ? from_env : std::to_string(ENCORE_CUDA_REPO_CUDART_VERSION);
  EXPECT_EQ(std::to_string(CUDART_VERSION), expected);
}

}  // namespace
}  // namespace encore
