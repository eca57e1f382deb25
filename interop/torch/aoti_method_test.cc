// SPDX-License-Identifier: Apache-2.0
// AotiMethod's refusals that need no GPU: files that are not packages.
#include "encore/interop/torch/aoti_method.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "encore/tests/process_util.h"

namespace encore::torch {
namespace {

using ::testing::HasSubstr;

TEST(AotiMethodTest, AMissingFileIsNotFoundAndNamed) {
  const std::string path = testing::TempPath("missing.pt2");
  StatusOr<MethodSpec> spec = AotiMethod("decoder", path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(spec.status().message(), "AOTInductor package '" + path + "' does not exist");
}

TEST(AotiMethodTest, AFileThatIsNotAZipIsRefused) {
  const std::string path = testing::TempPath("not_a_package.pt2");
  std::ofstream(path) << "this is not a zip archive";
  StatusOr<MethodSpec> spec = AotiMethod("decoder", path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr(path));
  EXPECT_THAT(spec.status().message(), HasSubstr("not a .pt2 package"));
  std::remove(path.c_str());
}

TEST(AotiMethodTest, ADirectoryIsRefused) {
  StatusOr<MethodSpec> spec = AotiMethod("decoder", "/");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr("'/' is not a regular file"));
}

TEST(AotiMethodTest, AZipThatIsNotAPackageIsRefusedWithPyTorchsWords) {
  const std::string path = testing::TempPath("empty_zip.pt2");
  {
    // An empty zip archive: only the end-of-central-directory record.
    std::ofstream out(path, std::ios::binary);
    const char eocd[22] = {'P', 'K', 5, 6};
    out.write("PK\3\4", 4);  // passes the magic check; PyTorch's reader must refuse the rest
    out.write(eocd, sizeof(eocd));
  }
  StatusOr<MethodSpec> spec = AotiMethod("decoder", path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr(path));
  EXPECT_THAT(spec.status().message(), HasSubstr("reading its metadata"));
  std::printf("%s\n", std::string(spec.status().message()).c_str());
  std::remove(path.c_str());
}

// A package compiled for the CPU (bench/torch_aoti_export.py --device cpu,
// minutes to make, so only where $ENCORE_TORCH_CPU_PACKAGE names one).
TEST(AotiMethodTest, APackageForTheCpuIsRefused) {
  const std::string path = testing::GetEnv("ENCORE_TORCH_CPU_PACKAGE");
  if (path.empty()) GTEST_SKIP() << "ENCORE_TORCH_CPU_PACKAGE is not set";
  StatusOr<MethodSpec> spec = AotiMethod("decoder", path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(), "AOTInductor package '" + path + "' is compiled for cpu, not CUDA");
  // A model the package does not hold.
  AotiOptions o;
  o.model_name = "no_such_model";
  StatusOr<MethodSpec> other = AotiMethod("decoder", path, o);
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("(model 'no_such_model')"));
}

}  // namespace
}  // namespace encore::torch
