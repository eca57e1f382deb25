// SPDX-License-Identifier: Apache-2.0
// BlockSnapshot on a GPU: save, modify, restore gives back the listed
// blocks exactly and leaves the others as modified, for regions of every
// alignment; Compare finds the first modified byte in list order with both
// values; a snapshot made from ChangedBlocks covers what a write touched.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "encore/graph/verify/internal/block_snapshot.h"
#include "encore/graph/verify/internal/region_checksums.h"
#include "encore/graph/verify/internal/verify_test_util.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr size_t kMiB = kChecksumBlockBytes;

class BlockSnapshotTest : public testing::GpuStreamTest {
 protected:
  void SetUp() override {
    GpuStreamTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    dev_ = std::make_unique<DeviceBuffer<>>(kTotal);
    ASSERT_TRUE(dev_->ok());
    original_ = testing::RandomBytes(kTotal, 11);
    ASSERT_EQ(testing::ToDevice(dev_->get(), original_.data(), kTotal), cudaSuccess);
    // 16-, 1-, 8- and 4-byte aligned regions, partial last blocks.
    auto m = BlockMap::Create(
        {{base(0), 3 * kMiB + 100, "a"}, {base(kB), 2 * kMiB + 33, "b"}, {base(kC), 50, "c"}, {base(kD), kMiB, "d"}});
    ASSERT_TRUE(m.ok()) << m.status();
    map_ = std::move(*m);
    ASSERT_EQ(map_.num_blocks(), 4 + 3 + 1 + 1);
  }
  std::byte* base(size_t offset) const { return dev_->get() + offset; }
  std::vector<std::byte> Download() {
    std::vector<std::byte> v(kTotal);
    EXPECT_EQ(testing::ToHost(v.data(), dev_->get(), kTotal), cudaSuccess);
    return v;
  }
  // Byte offsets in the buffer that block b covers.
  std::pair<size_t, size_t> Span(int64_t b) const {
    auto at = map_.Locate(b);
    EXPECT_TRUE(at.ok());
    const size_t from = static_cast<size_t>(map_.BlockData(*at) - dev_->get());
    return {from, from + at->bytes};
  }

  static constexpr size_t kB = 3 * kMiB + 256 + 3;
  static constexpr size_t kC = 5 * kMiB + 1032;  // 8 bytes past a 16-byte boundary
  static constexpr size_t kD = 6 * kMiB + 4;
  static constexpr size_t kTotal = 7 * kMiB + 64;
  std::unique_ptr<DeviceBuffer<>> dev_;
  std::vector<std::byte> original_;
  BlockMap map_;
};

TEST_F(BlockSnapshotTest, SaveModifyRestoreRoundTripsTheListedBlocks) {
  ASSERT_EQ((reinterpret_cast<uintptr_t>(base(kC)) & 15), 8u);
  const std::vector<int64_t> listed = {0, 3, 4, 6, 7, 8};
  auto snap = BlockSnapshot::Create(map_, listed, s());
  ASSERT_TRUE(snap.ok()) << snap.status();
  size_t want_bytes = 0;
  for (int64_t b : listed) want_bytes += (Span(b).second - Span(b).first + 15) / 16 * 16;
  EXPECT_EQ(snap->snapshot_bytes(), want_bytes);
  ASSERT_TRUE(snap->Save(s()).ok());
  ASSERT_TRUE(snap->Compare(s()).ok());
  auto same = snap->ReadDifference(s());
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->differs);
  // Everything rewritten.
  const std::vector<std::byte> modified = testing::RandomBytes(kTotal, 12);
  ASSERT_EQ(testing::ToDevice(dev_->get(), modified.data(), kTotal), cudaSuccess);
  ASSERT_TRUE(snap->Compare(s()).ok());
  auto diff = snap->ReadDifference(s());
  ASSERT_TRUE(diff.ok());
  // The first listed block's first byte that differs.
  size_t first = 0;
  while (original_[first] == modified[first]) ++first;
  EXPECT_TRUE(diff->differs);
  EXPECT_EQ(diff->block, 0);
  EXPECT_EQ(diff->region, 0u);
  EXPECT_EQ(diff->offset_in_region, first);
  EXPECT_EQ(diff->saved, static_cast<uint8_t>(original_[first]));
  EXPECT_EQ(diff->current, static_cast<uint8_t>(modified[first]));
  ASSERT_TRUE(snap->Restore(s()).ok());
  const std::vector<std::byte> now = Download();
  std::vector<bool> in_list(kTotal, false);
  for (int64_t b : listed) {
    auto [from, to] = Span(b);
    for (size_t i = from; i < to; ++i) in_list[i] = true;
  }
  for (size_t i = 0; i < kTotal; ++i) {
    ASSERT_EQ(now[i], in_list[i] ? original_[i] : modified[i]) << "byte " << i << (in_list[i] ? " listed" : "");
  }
  ASSERT_TRUE(snap->Compare(s()).ok());
  auto after = snap->ReadDifference(s());
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->differs);
}

TEST_F(BlockSnapshotTest, CompareFindsTheFirstModifiedByteInListOrder) {
  const std::vector<int64_t> listed = {1, 5, 6, 7, 8};
  auto snap = BlockSnapshot::Create(map_, listed, s());
  ASSERT_TRUE(snap.ok());
  ASSERT_TRUE(snap->Save(s()).ok());
  // Block 0 is not listed: its change is invisible. Blocks 6 (b's partial
  // last block, 1-byte aligned) and 8 change; 6 comes first.
  testing::FlipBit(base(10), 0);
  const size_t b6 = Span(6).first, b8 = Span(8).first;
  testing::WriteByte(base(b8 + 5), static_cast<uint8_t>(original_[b8 + 5]) ^ 0xff);
  testing::WriteByte(base(b6 + 31), static_cast<uint8_t>(original_[b6 + 31]) ^ 0x10);
  testing::WriteByte(base(b6 + 32), static_cast<uint8_t>(original_[b6 + 32]) ^ 0x01);
  ASSERT_TRUE(snap->Compare(s()).ok());
  auto d = snap->ReadDifference(s());
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->differs);
  EXPECT_EQ(d->block, 6);
  EXPECT_EQ(d->region, 1u);
  EXPECT_EQ(d->offset_in_region, 2 * kMiB + 31);
  EXPECT_EQ(d->saved, static_cast<uint8_t>(original_[b6 + 31]));
  EXPECT_EQ(d->current, static_cast<uint8_t>(original_[b6 + 31]) ^ 0x10);
  ASSERT_TRUE(snap->Restore(s()).ok());
  ASSERT_TRUE(snap->Compare(s()).ok());
  auto clean = snap->ReadDifference(s());
  ASSERT_TRUE(clean.ok());
  EXPECT_FALSE(clean->differs);
  EXPECT_NE(testing::ReadByte(base(10)), static_cast<uint8_t>(original_[10]));  // unlisted: kept
  EXPECT_EQ(testing::ReadByte(base(b8 + 5)), static_cast<uint8_t>(original_[b8 + 5]));
}

TEST_F(BlockSnapshotTest, SnapshotOfChangedBlocksUndoesAWrite) {
  auto sums = RegionChecksums::Create({{base(0), 3 * kMiB + 100, "a"}, {base(kB), 2 * kMiB + 33, "b"}}, {}, s());
  ASSERT_TRUE(sums.ok()) << sums.status();
  ASSERT_TRUE(sums->Compute(0, s()).ok());
  // A "warmup" writes blocks 2 and 5.
  testing::FlipBit(base(2 * kMiB + 7), 3);
  testing::FlipBit(base(kB + kMiB + 9), 3);
  ASSERT_TRUE(sums->Compute(1, s()).ok());
  auto changed = sums->ChangedBlocks(0, 1, 16, s());
  ASSERT_TRUE(changed.ok());
  ASSERT_EQ(changed->blocks, (std::vector<int64_t>{2, 5}));
  auto snap = BlockSnapshot::Create(sums->map(), changed->blocks, s());
  ASSERT_TRUE(snap.ok());
  ASSERT_TRUE(snap->Save(s()).ok());
  // The same write again (a second run), then undone from the snapshot.
  testing::FlipBit(base(2 * kMiB + 7), 3);
  testing::FlipBit(base(kB + kMiB + 9), 3);
  ASSERT_TRUE(snap->Restore(s()).ok());
  ASSERT_TRUE(sums->ComputeAndCompare(0, 1, false, s()).ok());
  auto v = sums->ReadVerdict(s());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->differing_blocks, 0);
}

TEST_F(BlockSnapshotTest, EmptyListHoldsNothingAndFindsNothing) {
  auto snap = BlockSnapshot::Create(map_, {}, s());
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->snapshot_bytes(), 0u);
  ASSERT_TRUE(snap->Save(s()).ok());
  ASSERT_TRUE(snap->Restore(s()).ok());
  ASSERT_TRUE(snap->Compare(s()).ok());
  auto d = snap->ReadDifference(s());
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->differs);
}

}  // namespace
}  // namespace encore
