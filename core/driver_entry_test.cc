// SPDX-License-Identifier: Apache-2.0
// Which driver entry points encore asks for, with the driver's version and
// the runtime's answers faked in the fault table: no GPU.
#include "encore/core/internal/driver_entry.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

TEST(EntryPointVersionTest, ByVersionAsksAtTheSymbolsVersionOnlyWithinTheDriver) {
  // 13.2's parameter count on CUDA 13.0's driver (580): not asked, so not refused.
  EXPECT_EQ(EntryPointVersion(13020, 13000, 13000, /*by_version=*/true), 0);
  EXPECT_EQ(EntryPointVersion(13020, 13010, 13000, true), 0);
  // On a 13.2 driver a 13.0 build asks at 13.2, as the runtime documents for
  // a symbol newer than the toolkit.
  EXPECT_EQ(EntryPointVersion(13020, 13020, 13000, true), 13020);
  EXPECT_EQ(EntryPointVersion(12040, 13000, 12090, true), 12040);
  EXPECT_EQ(EntryPointVersion(12040, 12040, 13000, true), 12040);
  EXPECT_EQ(EntryPointVersion(12040, 12030, 13000, true), 0);
  EXPECT_EQ(EntryPointVersion(12040, 0, 13000, true), 0);  // no driver
}

TEST(EntryPointVersionTest, WithoutByVersionTheRuntimesVersionMustReachTheSymbolAndStayWithinTheDriver) {
  EXPECT_EQ(EntryPointVersion(12040, 13000, 12040, /*by_version=*/false), 12040);
  EXPECT_EQ(EntryPointVersion(13020, 13020, 12040, false), 0);  // a 12.4 runtime cannot ask for 13.2's ABI
  EXPECT_EQ(EntryPointVersion(12040, 12030, 12040, false), 0);  // the runtime is newer than the driver
  EXPECT_EQ(EntryPointVersion(12000, 12040, 12040, false), 12040);
}

// A fault table whose driver version and entry points are this test's.
struct FakeDriver {
  static inline int version = 0;
  static inline cudaError_t version_error = cudaSuccess;
  static inline cudaError_t query_error = cudaSuccess;
  static inline cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSuccess;
  static inline std::vector<std::pair<std::string, unsigned>> asked;
  static inline int symbol = 0;  // what a found symbol's address points at

  static cudaError_t DriverGetVersion(int* v) {
    *v = version;
    return version_error;
  }
  static cudaError_t GetDriverEntryPoint(const char* name, void** fn, unsigned int at,
                                         cudaDriverEntryPointQueryResult* result) {
    asked.emplace_back(name, at);
    *fn = found == cudaDriverEntryPointSuccess ? &symbol : nullptr;
    *result = found;
    return query_error;
  }
};

class DriverEntryPointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeDriver::version = 13000;
    FakeDriver::version_error = cudaSuccess;
    FakeDriver::query_error = cudaSuccess;
    FakeDriver::found = cudaDriverEntryPointSuccess;
    FakeDriver::asked.clear();
    table_ = RealCudaApi();
    table_.DriverGetVersion = &FakeDriver::DriverGetVersion;
    table_.GetDriverEntryPoint = &FakeDriver::GetDriverEntryPoint;
    previous_ = internal::g_cuda_api.exchange(&table_);
  }
  void TearDown() override { internal::g_cuda_api.store(previous_); }

  CudaApi table_{};
  const CudaApi* previous_ = nullptr;
};

TEST_F(DriverEntryPointTest, ASymbolNewerThanTheDriverIsNotAskedFor) {
  EXPECT_EQ(DriverEntryPoint("cuFuncGetParamCount", 13020), nullptr);
  EXPECT_TRUE(FakeDriver::asked.empty());
  // A 13.2 driver has it; a runtime before 12.5 (which asks at its own
  // version) cannot ask for it.
  FakeDriver::version = 13020;
  const int at = EntryPointVersion(13020, 13020, CUDART_VERSION, kEntryPointsByVersion);
  EXPECT_EQ(DriverEntryPoint("cuFuncGetParamCount", 13020), at != 0 ? &FakeDriver::symbol : nullptr);
  ASSERT_EQ(FakeDriver::asked.size(), at != 0 ? 1u : 0u);
  if (at == 0) return;
  EXPECT_EQ(FakeDriver::asked[0].first, "cuFuncGetParamCount");
  EXPECT_EQ(FakeDriver::asked[0].second, 13020u);
}

TEST_F(DriverEntryPointTest, ASymbolTheDriverHasIsAskedForAtItsVersion) {
  EXPECT_EQ(DriverEntryPoint("cuFuncGetParamInfo", 12040), &FakeDriver::symbol);
  ASSERT_EQ(FakeDriver::asked.size(), 1u);
  EXPECT_EQ(FakeDriver::asked[0].second, kEntryPointsByVersion ? 12040u : static_cast<unsigned>(CUDART_VERSION));
}

TEST_F(DriverEntryPointTest, NoDriverNoQuery) {
  FakeDriver::version = 0;  // what cudaDriverGetVersion says where no driver is installed
  EXPECT_EQ(DriverEntryPoint("cuFuncGetParamInfo", 12040), nullptr);
  FakeDriver::version = 13000;
  FakeDriver::version_error = cudaErrorInsufficientDriver;
  EXPECT_EQ(DriverEntryPoint("cuFuncGetParamInfo", 12040), nullptr);
  EXPECT_TRUE(FakeDriver::asked.empty());
}

TEST_F(DriverEntryPointTest, NotFoundAndAFailedQueryAreNull) {
  FakeDriver::found = cudaDriverEntryPointSymbolNotFound;
  EXPECT_EQ(DriverEntryPoint("cuNoSuchCall", 12040), nullptr);
  FakeDriver::found = cudaDriverEntryPointSuccess;
  FakeDriver::query_error = cudaErrorInvalidValue;
  EXPECT_EQ(DriverEntryPoint("cuFuncGetParamInfo", 12040), nullptr);
  EXPECT_EQ(FakeDriver::asked.size(), 2u);
}

TEST(DriverEntryPointFaultTest, TheQueriesGoThroughTheFaultTable) {
  CudaFaultInjector inject;
  inject.FailNth(CudaCall::kDriverGetVersion, 1, cudaErrorInsufficientDriver);
  EXPECT_EQ(DriverEntryPoint("cuFuncGetParamInfo", 12040), nullptr);
  EXPECT_EQ(inject.Count(CudaCall::kDriverGetVersion), 1);
  EXPECT_EQ(inject.Count(CudaCall::kGetDriverEntryPoint), 0);
  EXPECT_EQ(CudaCallName(CudaCall::kGetDriverEntryPoint), "cudaGetDriverEntryPoint");
}

}  // namespace
}  // namespace encore
