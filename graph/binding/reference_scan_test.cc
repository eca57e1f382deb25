// SPDX-License-Identifier: Apache-2.0
// How a kernel's parameter layout is read, with the driver's answers faked
// in the fault table: no GPU. Each test names its own function handles,
// since layouts are kept per handle for the process.
#include "encore/graph/binding/internal/reference_scan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
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

// A graph of one kernel node whose parameters are (pointer, int, pointer),
// faked in the fault table: what the rebind's scan of a moved constant's
// old bytes finds in it.
struct FakeGraph {
  static inline uint64_t first = 0, second = 0;
  static inline int n = 7;
  static inline void* params[3] = {&first, &n, &second};
  static cudaGraphNode_t Node() { return reinterpret_cast<cudaGraphNode_t>(uintptr_t{0xd00d}); }
  static cudaError_t GetNodes(cudaGraph_t, cudaGraphNode_t* nodes, size_t* count) {
    if (nodes != nullptr) nodes[0] = Node();
    *count = 1;
    return cudaSuccess;
  }
  static cudaError_t Type(cudaGraphNode_t, cudaGraphNodeType* t) {
    *t = cudaGraphNodeTypeKernel;
    return cudaSuccess;
  }
  static cudaError_t KernelParams(cudaGraphNode_t, CUDA_KERNEL_NODE_PARAMS* p) {
    *p = CUDA_KERNEL_NODE_PARAMS{};
    p->func = reinterpret_cast<CUfunction>(uintptr_t{0x6000});
    p->kernelParams = params;
    return cudaSuccess;
  }
};

class ConstantScanTest : public ParamLayoutTest {
 protected:
  void SetUp() override {
    ParamLayoutTest::SetUp();
    FakeKernel::has_count = true;
    table_.GraphGetNodes = &FakeGraph::GetNodes;
    table_.GraphNodeGetType = &FakeGraph::Type;
    table_.DriverGraphKernelNodeGetParams = &FakeGraph::KernelParams;
  }
  // Linear's weight (16 KiB, moved) and the bias right after it, as
  // PyTorch's caching allocator lays them out; the kernel takes the bias
  // first and the weight second.
  static constexpr uintptr_t kWeight = 0x7f0000010000, kWeightBytes = 0x4000, kBias = kWeight + kWeightBytes;
  static ScanResult Scan(std::span<const TensorRef> staying) {
    FakeGraph::first = kBias;
    FakeGraph::second = kWeight + 64;
    const std::vector<TensorRef> old = {
        TensorRef{reinterpret_cast<void*>(kWeight), DType::kUInt8, {static_cast<int64_t>(kWeightBytes)}, {}}};
    const std::vector<std::string> names = {"weight"};
    ScanOptions options;
    options.names = names;
    options.staying = staying;
    return ReferenceScan::Run(reinterpret_cast<cudaGraph_t>(uintptr_t{0xbeef}), old, {}, {}, nullptr, &options);
  }
};

TEST_F(ConstantScanTest, AWordAtAMovedConstantsEndThatNamesAStayingOneIsThatOnesReference) {
  const std::vector<TensorRef> bias = {TensorRef{reinterpret_cast<void*>(kBias), DType::kUInt8, {256}, {}}};
  ScanResult r = Scan(bias);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.unsafe, "");
  ASSERT_EQ(r.kernels.size(), 1u);
  ASSERT_EQ(r.kernels[0].refs.size(), 1u);  // the weight's word only; the bias stays as it is
  EXPECT_EQ(r.kernels[0].refs[0].offset, 16u);
  EXPECT_EQ(r.kernels[0].refs[0].delta, 64u);
}

TEST_F(ConstantScanTest, AWordAtAMovedConstantsEndThatNamesNothingKnownIsAnEndPointer) {
  ScanResult r = Scan({});
  EXPECT_NE(r.unsafe.find("points one past the end of constant 'weight'"), std::string::npos) << r.unsafe;
}

// A graph of one memory allocation node and one free node (a body that
// called cudaMallocAsync and cudaFreeAsync), the graph API faked.
cudaGraphNode_t const kMemNodes[] = {reinterpret_cast<cudaGraphNode_t>(uintptr_t{0x10}),
                                     reinterpret_cast<cudaGraphNode_t>(uintptr_t{0x20})};
cudaError_t MemGraphNodes(cudaGraph_t, cudaGraphNode_t* nodes, size_t* n) {
  if (nodes != nullptr) {
    for (size_t i = 0; i < *n && i < 2; ++i) nodes[i] = kMemNodes[i];
  }
  *n = 2;
  return cudaSuccess;
}
cudaError_t MemNodeType(cudaGraphNode_t n, cudaGraphNodeType* type) {
  *type = n == kMemNodes[0] ? cudaGraphNodeTypeMemAlloc : cudaGraphNodeTypeMemFree;
  return cudaSuccess;
}

TEST(ReferenceScanTest, MemoryNodesKeepTheGraphFromADirectFormThatCudaCouldNotClone) {
  CudaApi table = RealCudaApi();
  table.GraphGetNodes = &MemGraphNodes;
  table.GraphNodeGetType = &MemNodeType;
  const CudaApi* previous = internal::g_cuda_api.exchange(&table);
  const ScanResult r = ReferenceScan::Run(reinterpret_cast<cudaGraph_t>(uintptr_t{0x1}), {}, {}, {});
  internal::g_cuda_api.store(previous);
  EXPECT_TRUE(r.has_memory_nodes);
  EXPECT_TRUE(r.complete);
  EXPECT_NE(r.unsafe.find("memory allocation or free nodes"), std::string::npos) << r.unsafe;
  EXPECT_NE(r.unsafe.find("cannot clone"), std::string::npos) << r.unsafe;
}

}  // namespace
}  // namespace encore
