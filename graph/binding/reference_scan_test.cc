// SPDX-License-Identifier: Apache-2.0
// How a kernel's parameter layout is read, with the driver's answers faked
// in the fault table: no GPU. Each test names its own function handles,
// since layouts are kept per handle for the process.
#include "encore/graph/binding/internal/reference_scan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

// A kernel of three parameters: a pointer, an int and a pointer.
struct FakeKernel {
  static inline bool has_count = false;  // a 13.2+ driver's cuFuncGetParamCount
  static inline int fail_call = 0;       // 1-based cuFuncGetParamInfo call that fails once; 0: none
  static inline int calls = 0;
  static inline std::vector<size_t> asked;  // indices cuFuncGetParamInfo was asked for

  static constexpr size_t kOffsets[] = {0, 8, 16};
  static constexpr size_t kSizes[] = {8, 4, 8};

  static cudaError_t Info(size_t i, size_t* offset, size_t* size) {
    asked.push_back(i);
    if (++calls == fail_call) return cudaErrorInvalidValue;
    if (i >= 3) return cudaErrorInvalidValue;  // past the last: what the driver says
    *offset = kOffsets[i];
    *size = kSizes[i];
    return cudaSuccess;
  }
  static cudaError_t FuncInfo(CUfunction, size_t i, size_t* offset, size_t* size) { return Info(i, offset, size); }
  static cudaError_t KernelInfo(CUkernel, size_t i, size_t* offset, size_t* size) { return Info(i, offset, size); }
  static cudaError_t Count(size_t* n) {
    if (!has_count) return cudaErrorNotSupported;
    *n = 3;
    return cudaSuccess;
  }
  static cudaError_t FuncCount(CUfunction, size_t* n) { return Count(n); }
  static cudaError_t KernelCount(CUkernel, size_t* n) { return Count(n); }
};

class ParamLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeKernel::has_count = false;
    FakeKernel::fail_call = 0;
    FakeKernel::calls = 0;
    FakeKernel::asked.clear();
    table_ = RealCudaApi();
    table_.DriverFuncGetParamInfo = &FakeKernel::FuncInfo;
    table_.DriverKernelGetParamInfo = &FakeKernel::KernelInfo;
    table_.DriverFuncGetParamCount = &FakeKernel::FuncCount;
    table_.DriverKernelGetParamCount = &FakeKernel::KernelCount;
    previous_ = internal::g_cuda_api.exchange(&table_);
  }
  void TearDown() override { internal::g_cuda_api.store(previous_); }

  static CUDA_KERNEL_NODE_PARAMS Func(uintptr_t handle) {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = reinterpret_cast<CUfunction>(handle);
    return p;
  }
  static void ExpectThreeParams(const StatusOr<ParamLayout>& l) {
    ASSERT_TRUE(l.ok()) << l.status().message();
    EXPECT_EQ(l->offsets, (std::vector<size_t>{0, 8, 16}));
    EXPECT_EQ(l->sizes, (std::vector<size_t>{8, 4, 8}));
  }

  CudaApi table_{};
  const CudaApi* previous_ = nullptr;
};

TEST_F(ParamLayoutTest, WithTheDriversCountNothingIsAskedPastTheLastParameter) {
  FakeKernel::has_count = true;
  ExpectThreeParams(KernelParamLayout(Func(0x1000)));
  EXPECT_EQ(FakeKernel::asked, (std::vector<size_t>{0, 1, 2}));
}

TEST_F(ParamLayoutTest, ACUkernelIsCountedAndReadThroughTheKernelCalls) {
  FakeKernel::has_count = true;
  CUDA_KERNEL_NODE_PARAMS p{};
  p.kern = reinterpret_cast<CUkernel>(uintptr_t{0x2000});
  ExpectThreeParams(KernelParamLayout(p));
  EXPECT_EQ(FakeKernel::asked, (std::vector<size_t>{0, 1, 2}));
}

TEST_F(ParamLayoutTest, WithoutACountTheEndIsWhereTheDriverSaysSoTwice) {
  ExpectThreeParams(KernelParamLayout(Func(0x3000)));
  EXPECT_EQ(FakeKernel::asked, (std::vector<size_t>{0, 1, 2, 3, 3}));
}

TEST_F(ParamLayoutTest, ALayoutIsReadOncePerFunction) {
  FakeKernel::has_count = true;
  ExpectThreeParams(KernelParamLayout(Func(0x4000)));
  ExpectThreeParams(KernelParamLayout(Func(0x4000)));
  EXPECT_EQ(FakeKernel::asked.size(), 3u);
}

TEST_F(ParamLayoutTest, AFailureMidListIsAnErrorNotTheEnd) {
  FakeKernel::fail_call = 2;  // index 1, once
  StatusOr<ParamLayout> l = KernelParamLayout(Func(0x5000));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("cuFuncGetParamInfo"), std::string_view::npos) << l.status().message();
  EXPECT_EQ(FakeKernel::asked, (std::vector<size_t>{0, 1, 1}));
}

}  // namespace
}  // namespace encore
