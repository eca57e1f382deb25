// SPDX-License-Identifier: Apache-2.0
// GraphArena's bookkeeping of captures held for a later first launch
// (capture=background), on the CPU: the fault seam's table is swapped for
// one whose cudaMalloc and cudaFree are the host's, so no GPU is needed.
#include "encore/allocator/internal/graph_arena.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

std::set<void*>* g_live = nullptr;

cudaError_t HostMalloc(void** p, size_t bytes) {
  *p = std::malloc(bytes);
  g_live->insert(*p);
  return cudaSuccess;
}
cudaError_t HostFree(void* p) {
  // Freeing what is not allocated (or twice) is the bug these tests look for.
  if (g_live->erase(p) != 1) return cudaErrorInvalidValue;
  std::free(p);
  return cudaSuccess;
}
cudaError_t ExchangeMode(cudaStreamCaptureMode*) { return cudaSuccess; }
cudaError_t Device0(int* d) {
  *d = 0;
  return cudaSuccess;
}
// No virtual memory management here: the slabs come from cudaMalloc, the
// host's malloc above (allocator/internal/slab_memory.h).
cudaError_t NoVmm(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) {
  return cudaErrorNotSupported;
}

class GraphArenaHeldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_live = &live_;
    table_ = RealCudaApi();
    table_.Malloc = HostMalloc;
    table_.Free = HostFree;
    table_.ThreadExchangeStreamCaptureMode = ExchangeMode;
    table_.GetDevice = Device0;
    table_.DriverMemGetAllocationGranularity = NoVmm;
    saved_ = internal::g_cuda_api.exchange(&table_);
  }
  void TearDown() override {
    arena_.reset();
    EXPECT_TRUE(live_.empty()) << live_.size() << " slabs never freed";
    internal::g_cuda_api.store(saved_);
    g_live = nullptr;
  }
  static constexpr size_t kMiB = GraphArena::kMinSlabBytes;

  std::set<void*> live_;
  CudaApi table_{};
  const CudaApi* saved_ = nullptr;
  std::unique_ptr<GraphArena> arena_ = std::make_unique<GraphArena>();
};

// A held capture's memory is pending until its first launch commits it;
// another capture may begin and commit meanwhile.
TEST_F(GraphArenaHeldTest, AHeldCaptureCommitsAtItsFirstLaunch) {
  GraphArena& a = *arena_;
  a.set_shared();
  ASSERT_TRUE(a.BeginCapture(1, kMiB).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB / 2).ok());
  a.HoldCapture();
  EXPECT_EQ(a.stats().reserved_bytes, kMiB);
  EXPECT_EQ(a.stats().live_bytes, kMiB / 2);
  // Another capture bumps from the same first slab and grows the arena.
  ASSERT_TRUE(a.BeginCapture(2, 0).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());
  a.CommitCapture();
  EXPECT_EQ(live_.size(), 2u);
  a.CommitHeld(1);
  a.CommitHeld(1);  // once
  ASSERT_TRUE(a.TrimUnused().ok());
  EXPECT_EQ(live_.size(), 2u);  // capture 2 reaches both
  a.DropGraph(2);
  ASSERT_TRUE(a.TrimUnused().ok());
  EXPECT_EQ(live_.size(), 1u);  // capture 1 reaches the first only
}

// Abandoned, a held capture frees its own slabs that nothing else reaches,
// exactly once; a slab a later capture reached stays (the method's).
TEST_F(GraphArenaHeldTest, AbortHeldFreesOnlyWhatNothingElseReaches) {
  GraphArena& a = *arena_;
  ASSERT_TRUE(a.BeginCapture(1, 0).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());      // slab 0: capture 1's
  ASSERT_TRUE(a.AllocateCapture(2 * kMiB).ok());  // slab 1: capture 1's
  a.HoldCapture();
  ASSERT_TRUE(a.BeginCapture(2, 0).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());  // reaches slab 0 only
  a.HoldCapture();
  EXPECT_EQ(live_.size(), 2u);
  ASSERT_TRUE(a.AbortHeld(1).ok());
  EXPECT_EQ(live_.size(), 1u);  // slab 1 freed; slab 0 stays for capture 2
  ASSERT_TRUE(a.AbortHeld(1).ok());  // never twice
  EXPECT_EQ(live_.size(), 1u);
  a.CommitHeld(2);
  EXPECT_EQ(a.stats().reserved_bytes, kMiB);
  ASSERT_TRUE(a.ReleaseAll().ok());
  EXPECT_TRUE(live_.empty());
}

// Nothing is trimmed while a capture is open, and a held capture's reach is
// kept; its own pending slabs are freed when the arena goes.
TEST_F(GraphArenaHeldTest, TrimKeepsWhatAHeldCaptureReaches) {
  GraphArena& a = *arena_;
  ASSERT_TRUE(a.BeginCapture(1, 0).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());
  a.CommitCapture();
  ASSERT_TRUE(a.BeginCapture(2, 0).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());  // reaches both committed slabs
  a.HoldCapture();
  a.DropGraph(1);
  ASSERT_TRUE(a.TrimUnused().ok());
  EXPECT_EQ(live_.size(), 2u);
  ASSERT_TRUE(a.BeginCapture(3, 3 * kMiB).ok());  // a pending reserve slab of capture 3
  EXPECT_EQ(live_.size(), 3u);
  ASSERT_TRUE(a.AbortCapture().ok());
  EXPECT_EQ(live_.size(), 2u);
}

// Abandoned while another capture is open, a held capture's slabs are
// freed when that capture ends, not beside it (the open capture bumps from
// the first slab, so that one stays, as the method's).
TEST_F(GraphArenaHeldTest, AbortHeldDuringAnOpenCaptureFreesAtItsEnd) {
  GraphArena& a = *arena_;
  ASSERT_TRUE(a.BeginCapture(1, 0).ok());
  ASSERT_TRUE(a.AllocateCapture(kMiB).ok());      // slab 0
  ASSERT_TRUE(a.AllocateCapture(2 * kMiB).ok());  // slab 1
  a.HoldCapture();
  ASSERT_TRUE(a.BeginCapture(2, 0).ok());
  ASSERT_TRUE(a.AbortHeld(1).ok());
  EXPECT_EQ(live_.size(), 2u);  // slab 1 is out of the ledger, its free deferred
  EXPECT_EQ(a.stats().reserved_bytes, kMiB);
  ASSERT_TRUE(a.AllocateCapture(kMiB / 2).ok());
  a.HoldCapture();
  EXPECT_EQ(live_.size(), 1u);  // capture 2's end freed slab 1
  a.CommitHeld(2);
  ASSERT_TRUE(a.ReleaseAll().ok());
  EXPECT_TRUE(live_.empty());
}

}  // namespace
}  // namespace encore
