// SPDX-License-Identifier: Apache-2.0
// BlockMap: blocks numbered across regions, partial last blocks, empty
// regions, and the checks on regions and block lists.
#include "encore/graph/verify/internal/block_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace encore {
namespace {

constexpr size_t kMiB = kChecksumBlockBytes;

const void* Fake(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(BlockMapTest, NumbersBlocksAcrossRegionsWithPartialLastBlocks) {
  auto m = BlockMap::Create({{Fake(0x1000), 2 * kMiB, "a"}, {Fake(0x9000001), kMiB + 3, "b"}, {Fake(0x7), 5, "c"}});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_blocks(), 2 + 2 + 1);
  EXPECT_EQ(m->first_block(0), 0);
  EXPECT_EQ(m->first_block(1), 2);
  EXPECT_EQ(m->first_block(2), 4);
  struct Want {
    int64_t block;
    size_t region, offset, bytes;
  };
  for (const Want& w :
       {Want{0, 0, 0, kMiB}, Want{1, 0, kMiB, kMiB}, Want{2, 1, 0, kMiB}, Want{3, 1, kMiB, 3}, Want{4, 2, 0, 5}}) {
    auto at = m->Locate(w.block);
    ASSERT_TRUE(at.ok()) << at.status();
    EXPECT_EQ(at->region, w.region) << "block " << w.block;
    EXPECT_EQ(at->offset, w.offset) << "block " << w.block;
    EXPECT_EQ(at->bytes, w.bytes) << "block " << w.block;
  }
  auto at = m->Locate(3);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(m->BlockData(*at), static_cast<const std::byte*>(Fake(0x9000001)) + kMiB);
}

TEST(BlockMapTest, EmptyRegionsOwnNoBlockAndNeverCaptureALookup) {
  auto m = BlockMap::Create({{nullptr, 0, "empty0"},
                             {Fake(0x100), kMiB, "a"},
                             {nullptr, 0, "empty1"},
                             {Fake(0x200), 1, "b"},
                             {Fake(0x300), 0, "empty2"}});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_blocks(), 2);
  auto b0 = m->Locate(0);
  auto b1 = m->Locate(1);
  ASSERT_TRUE(b0.ok() && b1.ok());
  EXPECT_EQ(b0->region, 1u);
  EXPECT_EQ(b1->region, 3u);
  EXPECT_EQ(b1->bytes, 1u);
  EXPECT_EQ(m->first_block(4), 2);
}

TEST(BlockMapTest, BlocksIn) {
  EXPECT_EQ(BlockMap::BlocksIn(0), 0);
  EXPECT_EQ(BlockMap::BlocksIn(1), 1);
  EXPECT_EQ(BlockMap::BlocksIn(kMiB), 1);
  EXPECT_EQ(BlockMap::BlocksIn(kMiB + 1), 2);
  EXPECT_EQ(BlockMap::BlocksIn(size_t{8} << 30), 8192);
}

TEST(BlockMapTest, LocateAndBlockOfAreInverse) {
  auto m = BlockMap::Create({{Fake(0x10), 3 * kMiB + 17, "a"}, {Fake(0x20), 10, "b"}});
  ASSERT_TRUE(m.ok());
  for (int64_t b = 0; b < m->num_blocks(); ++b) {
    auto at = m->Locate(b);
    ASSERT_TRUE(at.ok());
    auto back = m->BlockOf(at->region, at->offset + at->bytes - 1);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, b);
  }
  EXPECT_EQ(m->BlockOf(0, 3 * kMiB + 17).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(m->BlockOf(2, 0).status().code(), StatusCode::kOutOfRange);
}

TEST(BlockMapTest, LocateOutsideIsOutOfRange) {
  auto m = BlockMap::Create({{Fake(0x10), kMiB, "a"}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->Locate(-1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(m->Locate(1).status().code(), StatusCode::kOutOfRange);
}

TEST(BlockMapTest, NullRegionWithBytesIsInvalidAndNamed) {
  auto m = BlockMap::Create({{Fake(0x10), 1, "a"}, {nullptr, 4, "weights"}});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("'weights'"), std::string_view::npos) << m.status();
}

TEST(BlockMapTest, TooManyBlocksForAGridIsInvalid) {
  // 2^31 blocks of 1 MiB: 2 PiB in two regions (addresses are never read).
  const size_t half = (size_t{1} << 30) * kMiB;
  auto m = BlockMap::Create({{Fake(0x10), half, "a"}, {Fake(0x20), half, "b"}});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
}

TEST(BlockMapTest, ValidateBlockList) {
  auto m = BlockMap::Create({{Fake(0x10), 4 * kMiB, "a"}});
  ASSERT_TRUE(m.ok());
  const std::vector<int64_t> good = {0, 2, 3};
  EXPECT_TRUE(m->ValidateBlockList(good, "list").ok());
  EXPECT_TRUE(m->ValidateBlockList({}, "list").ok());
  const std::vector<int64_t> dup = {1, 1};
  const std::vector<int64_t> down = {2, 1};
  const std::vector<int64_t> out = {0, 4};
  const std::vector<int64_t> neg = {-1};
  for (const auto* l : {&dup, &down, &out, &neg}) {
    Status s = m->ValidateBlockList(*l, "snapshot list");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("snapshot list"), std::string_view::npos) << s;
  }
}

}  // namespace
}  // namespace encore
