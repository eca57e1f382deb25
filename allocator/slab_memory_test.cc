// SPDX-License-Identifier: Apache-2.0
// SlabMemory and the graph arena's sleep on a CPU machine: the CUDA seam's
// table is swapped for a fake driver that keeps its address ranges,
// physical allocations and mappings on the host, so the bookkeeping (what
// a sleep gives back, that a wake maps at the same addresses, that every
// failed step is undone and nothing is freed twice) is checked without a
// GPU. allocator/graph_arena_gpu_test.cc and tests/sleep_gpu_test.cc run
// the same on a device.
#include "encore/allocator/internal/slab_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>

#include "encore/allocator/internal/graph_arena.h"
#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The fake driver: ranges, physical allocations and mappings, and the next
// failure of each call.
struct FakeDriver {
  bool vmm = true;
  size_t granularity = 2 * kMiB;
  CUdeviceptr next_va = 0x7f0000000000ull;
  uint64_t next_handle = 1;
  std::map<CUdeviceptr, size_t> ranges;
  std::map<uint64_t, size_t> handles;
  std::map<CUdeviceptr, uint64_t> mapped;
  std::set<CUdeviceptr> accessible;
  std::set<void*> mallocs;
  std::map<CudaCall, int> calls;
  std::map<CudaCall, cudaError_t> fail_next;

  cudaError_t Hit(CudaCall c) {
    ++calls[c];
    auto it = fail_next.find(c);
    if (it == fail_next.end()) return cudaSuccess;
    const cudaError_t e = it->second;
    fail_next.erase(it);
    return e;
  }
  size_t physical() const {
    size_t n = 0;
    for (const auto& [h, bytes] : handles) n += bytes;
    return n;
  }
};
FakeDriver* g = nullptr;

cudaError_t GetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t GetLastError() { return cudaSuccess; }
cudaError_t ExchangeMode(cudaStreamCaptureMode*) { return cudaSuccess; }
cudaError_t Malloc(void** p, size_t bytes) {
  if (cudaError_t e = g->Hit(CudaCall::kMalloc)) return e;
  *p = reinterpret_cast<void*>(g->next_va);
  g->next_va += bytes + 4096;
  g->mallocs.insert(*p);
  return cudaSuccess;
}
cudaError_t Free(void* p) {
  if (cudaError_t e = g->Hit(CudaCall::kFree)) return e;
  return g->mallocs.erase(p) ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t Granularity(size_t* n, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags) {
  if (!g->vmm) return cudaErrorNotSupported;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return cudaErrorInvalidValue;
  *n = g->granularity;
  return g->Hit(CudaCall::kDriverMemGetAllocationGranularity);
}
cudaError_t Reserve(CUdeviceptr* va, size_t size, size_t, CUdeviceptr, unsigned long long) {
  if (cudaError_t e = g->Hit(CudaCall::kDriverMemAddressReserve)) return e;
  if (size % g->granularity != 0) return cudaErrorInvalidValue;
  *va = g->next_va;
  g->next_va += size + g->granularity;
  g->ranges[*va] = size;
  return cudaSuccess;
}
cudaError_t AddressFree(CUdeviceptr va, size_t size) {
  if (cudaError_t e = g->Hit(CudaCall::kDriverMemAddressFree)) return e;
  auto it = g->ranges.find(va);
  if (it == g->ranges.end() || it->second != size || g->mapped.count(va)) return cudaErrorInvalidValue;
  g->ranges.erase(it);
  return cudaSuccess;
}
cudaError_t Create(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp*, unsigned long long) {
  if (cudaError_t e = g->Hit(CudaCall::kDriverMemCreate)) return e;
  *h = g->next_handle++;
  g->handles[*h] = size;
  return cudaSuccess;
}
cudaError_t Release(CUmemGenericAllocationHandle h) {
  if (cudaError_t e = g->Hit(CudaCall::kDriverMemRelease)) return e;
  return g->handles.erase(h) ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t Map(CUdeviceptr va, size_t size, size_t, CUmemGenericAllocationHandle h, unsigned long long) {
  if (cudaError_t e = g->Hit(CudaCall::kDriverMemMap)) return e;
  if (!g->ranges.count(va) || g->ranges[va] != size || !g->handles.count(h) || g->mapped.count(va)) {
    return cudaErrorInvalidValue;
  }
  g->mapped[va] = h;
  return cudaSuccess;
}
cudaError_t Unmap(CUdeviceptr va, size_t) {
  if (cudaError_t e = g->Hit(CudaCall::kDriverMemUnmap)) return e;
  g->accessible.erase(va);
  return g->mapped.erase(va) ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t SetAccess(CUdeviceptr va, size_t, const CUmemAccessDesc* d, size_t count) {
  if (cudaError_t e = g->Hit(CudaCall::kDriverMemSetAccess)) return e;
  if (count != 1 || d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE || !g->mapped.count(va)) {
    return cudaErrorInvalidValue;
  }
  g->accessible.insert(va);
  return cudaSuccess;
}

class SlabMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g = &driver_;
    api_ = RealCudaApi();
    api_.GetDevice = &GetDevice;
    api_.GetLastError = &GetLastError;
    api_.ThreadExchangeStreamCaptureMode = &ExchangeMode;
    api_.Malloc = &Malloc;
    api_.Free = &Free;
    api_.DriverMemGetAllocationGranularity = &Granularity;
    api_.DriverMemAddressReserve = &Reserve;
    api_.DriverMemAddressFree = &AddressFree;
    api_.DriverMemCreate = &Create;
    api_.DriverMemRelease = &Release;
    api_.DriverMemMap = &Map;
    api_.DriverMemUnmap = &Unmap;
    api_.DriverMemSetAccess = &SetAccess;
    previous_ = internal::g_cuda_api.exchange(&api_);
  }
  void TearDown() override {
    internal::g_cuda_api.store(previous_);
    g = nullptr;
  }
  // Nothing of the driver's is left: no range, memory or mapping.
  void ExpectNothingLeft() {
    EXPECT_TRUE(driver_.ranges.empty());
    EXPECT_TRUE(driver_.handles.empty());
    EXPECT_TRUE(driver_.mapped.empty());
    EXPECT_TRUE(driver_.mallocs.empty());
  }

  FakeDriver driver_;
  CudaApi api_{};
  const CudaApi* previous_ = nullptr;
};

CUdeviceptr Va(void* p) { return reinterpret_cast<CUdeviceptr>(p); }

TEST_F(SlabMemoryTest, ASlabIsARangeWithMemoryMappedIntoItAtTheGranularity) {
  {
    SlabMemory m;
    StatusOr<void*> p = m.Allocate(kMiB);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(driver_.ranges.size(), 1u);
    EXPECT_EQ(driver_.ranges.at(Va(*p)), 2 * kMiB);
    EXPECT_EQ(driver_.physical(), 2 * kMiB);
    EXPECT_EQ(driver_.accessible.count(Va(*p)), 1u);
    EXPECT_FALSE(m.asleep());
    EXPECT_EQ(m.kept_bytes(), 0u);
    ASSERT_TRUE(m.Free(*p).ok());
    ExpectNothingLeft();
    EXPECT_FALSE(m.Free(*p).ok()) << "freed twice";
    // The destructor frees what is left.
    ASSERT_TRUE(m.Allocate(5 * kMiB).ok());
    EXPECT_EQ(driver_.physical(), 6 * kMiB);
  }
  ExpectNothingLeft();
}

TEST_F(SlabMemoryTest, SleepGivesTheMemoryBackAndWakeMapsItAtTheSameAddresses) {
  SlabMemory m;
  StatusOr<void*> a = m.Allocate(kMiB), b = m.Allocate(3 * kMiB);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int round = 0; round < 2; ++round) {
    StatusOr<size_t> given = m.Sleep();
    ASSERT_TRUE(given.ok()) << given.status();
    EXPECT_EQ(*given, 6 * kMiB);
    EXPECT_TRUE(m.asleep());
    EXPECT_EQ(driver_.physical(), 0u);
    EXPECT_TRUE(driver_.mapped.empty());
    EXPECT_EQ(driver_.ranges.size(), 2u) << "the addresses are kept";
    EXPECT_EQ(m.Allocate(kMiB).status().code(), StatusCode::kFailedPrecondition);
    StatusOr<size_t> again = m.Sleep();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, 0u) << "nothing more to give back";
    ASSERT_TRUE(m.Wake().ok());
    EXPECT_FALSE(m.asleep());
    EXPECT_EQ(driver_.physical(), 6 * kMiB);
    EXPECT_EQ(driver_.mapped.count(Va(*a)) + driver_.mapped.count(Va(*b)), 2u);
    EXPECT_EQ(driver_.accessible.size(), 2u);
    ASSERT_TRUE(m.Wake().ok()) << "a wake when awake maps nothing";
  }
  EXPECT_EQ(driver_.calls[CudaCall::kDriverMemCreate], 6);
  EXPECT_EQ(driver_.calls[CudaCall::kDriverMemAddressReserve], 2);
}

TEST_F(SlabMemoryTest, AStepThatFailsIsUndoneAndNamed) {
  SlabMemory m;
  for (CudaCall c : {CudaCall::kDriverMemAddressReserve, CudaCall::kDriverMemCreate, CudaCall::kDriverMemMap,
                     CudaCall::kDriverMemSetAccess}) {
    driver_.fail_next[c] = cudaErrorMemoryAllocation;
    StatusOr<void*> p = m.Allocate(kMiB);
    ASSERT_FALSE(p.ok()) << CudaCallName(c);
    EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted) << p.status();
    EXPECT_NE(p.status().message().find(CudaCallName(c)), std::string_view::npos) << p.status();
    ExpectNothingLeft();
    EXPECT_FALSE(m.asleep());
  }
  ASSERT_TRUE(m.Allocate(kMiB).ok());
}

TEST_F(SlabMemoryTest, AWakeThatFailsLeavesTheRestAsleepAndFreeingASleepingSlabFreesItsRange) {
  SlabMemory m;
  StatusOr<void*> a = m.Allocate(kMiB), b = m.Allocate(kMiB);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(m.Sleep().ok());
  driver_.fail_next[CudaCall::kDriverMemCreate] = cudaErrorMemoryAllocation;
  Status w = m.Wake();
  EXPECT_EQ(w.code(), StatusCode::kResourceExhausted) << w;
  EXPECT_NE(w.message().find("mapping back a graph memory slab of 2097152 bytes"), std::string_view::npos) << w;
  EXPECT_TRUE(m.asleep());
  EXPECT_EQ(driver_.mapped.size(), 0u);
  ASSERT_TRUE(m.Free(*a).ok());
  ASSERT_TRUE(m.Free(*b).ok());
  EXPECT_FALSE(m.asleep());
  ExpectNothingLeft();
}

TEST_F(SlabMemoryTest, AReleaseThatFailsKeepsTheMemoryAndWakeMapsItAgain) {
  SlabMemory m;
  StatusOr<void*> a = m.Allocate(kMiB);
  ASSERT_TRUE(a.ok());
  driver_.fail_next[CudaCall::kDriverMemRelease] = cudaErrorInvalidValue;
  EXPECT_FALSE(m.Sleep().ok());
  EXPECT_TRUE(m.asleep()) << "unmapped: nothing may use it";
  EXPECT_EQ(driver_.physical(), 2 * kMiB);
  const int created = driver_.calls[CudaCall::kDriverMemCreate];
  ASSERT_TRUE(m.Wake().ok());
  EXPECT_EQ(driver_.calls[CudaCall::kDriverMemCreate], created) << "the kept memory is mapped again";
  EXPECT_EQ(driver_.mapped.count(Va(*a)), 1u);
  ASSERT_TRUE(m.Free(*a).ok());
  ExpectNothingLeft();
}

TEST_F(SlabMemoryTest, WithoutVirtualMemoryManagementSlabsComeFromCudaMallocAndStay) {
  driver_.vmm = false;
  SlabMemory m;
  StatusOr<void*> a = m.Allocate(kMiB);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(driver_.mallocs.size(), 1u);
  EXPECT_EQ(m.kept_bytes(), kMiB);
  StatusOr<size_t> given = m.Sleep();
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, 0u);
  EXPECT_FALSE(m.asleep());
  ASSERT_TRUE(m.Free(*a).ok());
  ExpectNothingLeft();
}

TEST_F(SlabMemoryTest, TheArenaKeepsEveryAddressThroughASleep) {
  GraphArena arena;
  ASSERT_TRUE(arena.BeginCapture(1, 3 * kMiB).ok());
  StatusOr<void*> p = arena.AllocateCapture(1000);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(arena.Sleep().status().code(), StatusCode::kFailedPrecondition) << "not during a capture";
  arena.CommitCapture();
  const MemoryStats before = arena.stats();
  EXPECT_EQ(before.reserved_bytes, 3 * kMiB) << "what the arena asked for, as with cudaMalloc";
  StatusOr<size_t> given = arena.Sleep();
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(*given, 4 * kMiB);
  EXPECT_TRUE(arena.asleep());
  EXPECT_EQ(arena.stats().reserved_bytes, before.reserved_bytes);
  ASSERT_TRUE(arena.Wake().ok());
  EXPECT_FALSE(arena.asleep());
  // The next capture bumps from the same first slab: the same addresses.
  ASSERT_TRUE(arena.BeginCapture(2, 3 * kMiB).ok());
  StatusOr<void*> q = arena.AllocateCapture(1000);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, *p);
  arena.CommitCapture();
  ASSERT_TRUE(arena.Sleep().ok());
  ASSERT_TRUE(arena.ReleaseAll().ok()) << "a sleeping arena frees its ranges";
  EXPECT_FALSE(arena.asleep());
  ExpectNothingLeft();
}

}  // namespace
}  // namespace encore
