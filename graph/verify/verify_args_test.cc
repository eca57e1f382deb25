// SPDX-License-Identifier: Apache-2.0
// What the verification units refuse before touching CUDA (so these run
// without a GPU), and the texts DeviceDiff shares with FirstDifference.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "encore/graph/verify/internal/output_compare.h"
#include "encore/graph/verify/internal/block_snapshot.h"
#include "encore/graph/verify/internal/device_diff.h"
#include "encore/graph/verify/internal/region_checksums.h"

namespace encore {
namespace {

constexpr cudaStream_t kNoStream = nullptr;  // never reached by these checks

const void* Fake(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(VerifyArgsTest, RegionChecksumsRejectsBadOptionsAndRegions) {
  std::vector<ChecksumRegion> one = {{Fake(0x100), 10, "w"}};
  RegionChecksumsOptions o;
  o.slots = 0;
  EXPECT_EQ(RegionChecksums::Create(one, o, kNoStream).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.list_capacity = 0;
  EXPECT_EQ(RegionChecksums::Create(one, o, kNoStream).status().code(), StatusCode::kInvalidArgument);
  for (int parts : {-1, checksum::kMaxParts + 1}) {
    o = {};
    o.ctas_per_block = parts;
    EXPECT_EQ(RegionChecksums::Create(one, o, kNoStream).status().code(), StatusCode::kInvalidArgument) << parts;
  }
  auto bad = RegionChecksums::Create({{nullptr, 5, "kv"}}, {}, kNoStream);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'kv'"), std::string_view::npos) << bad.status();
}

TEST(VerifyArgsTest, RegionChecksumsChecksSlotsBeforeLaunching) {
  RegionChecksums c;  // two slots, no blocks, no skip mask
  EXPECT_EQ(c.Compute(2, kNoStream).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Compute(-1, kNoStream).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(c.Compute(0, kNoStream).ok());  // nothing to do
  EXPECT_EQ(c.ComputeAndCompare(1, 1, false, kNoStream).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.ComputeAndCompare(0, 2, false, kNoStream).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.ComputeAndCompare(0, 1, true, kNoStream).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.CompareWith(0, 1, true, kNoStream).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.SetSkipBlocks({}, kNoStream).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.ChangedBlocks(0, 1, 4097, kNoStream).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.ChangedBlocks(0, 3, 1, kNoStream).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.ReadChecksums(0, 0, 1, kNoStream).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.ReadChecksums(0, -1, 0, kNoStream).status().code(), StatusCode::kInvalidArgument);
}

TEST(VerifyArgsTest, BlockSnapshotRejectsBadLists) {
  auto map = BlockMap::Create({{Fake(0x100), 3 * kChecksumBlockBytes, "state"}});
  ASSERT_TRUE(map.ok());
  for (const std::vector<int64_t>& l : {std::vector<int64_t>{2, 1}, {0, 0}, {3}, {-1}}) {
    EXPECT_EQ(BlockSnapshot::Create(*map, l, kNoStream).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(VerifyArgsTest, DeviceDiffChecksSlots) {
  EXPECT_EQ(DeviceDiff::Create(0, kNoStream).status().code(), StatusCode::kInvalidArgument);
  DeviceDiff d;
  TensorRef t;
  t.shape = {4};
  EXPECT_EQ(d.Enqueue(0, t, Fake(0x10), Fake(0x20), 0, kNoStream).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.EnqueueBytes(0, Fake(0x10), Fake(0x20), 4, kNoStream).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.Read(0, kNoStream).status().code(), StatusCode::kInvalidArgument);
}

template <class T>
std::vector<std::byte> Bytes(std::vector<T> v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// FormatElementDifference is FirstDifference's own text for the element.
TEST(VerifyArgsTest, FormatMatchesFirstDifference) {
  struct Case {
    DType dtype;
    std::vector<std::byte> g, e;
    int64_t element;
    const char* text;
  };
  const std::vector<Case> cases = {
      {DType::kFloat32, Bytes<float>({1, 2.5f}), Bytes<float>({1, 3}), 1, "element 1: graph 2.5, eager 3"},
      {DType::kInt64, Bytes<int64_t>({-7}), Bytes<int64_t>({5}), 0, "element 0: graph -7, eager 5"},
      {DType::kUInt8, Bytes<uint8_t>({0, 0, 255}), Bytes<uint8_t>({0, 0, 1}), 2, "element 2: graph 255, eager 1"},
      {DType::kFloat16, Bytes<uint16_t>({0x3c00}), Bytes<uint16_t>({0x7e00}), 0, "element 0: graph 1, eager nan"},
      {DType::kBFloat16, Bytes<uint16_t>({0x4049}), Bytes<uint16_t>({0xff80}), 0,
       "element 0: graph 3.140625, eager -inf"},
  };
  for (const Case& c : cases) {
    TensorRef t;
    t.dtype = c.dtype;
    t.shape = {static_cast<int64_t>(c.g.size() / DTypeSize(c.dtype))};
    EXPECT_EQ(FirstDifference(t, c.g.data(), c.e.data(), 0), c.text);
    const size_t at = c.element * DTypeSize(c.dtype);
    EXPECT_EQ(FormatElementDifference(c.dtype, c.element, c.g.data() + at, c.e.data() + at), c.text);
  }
}

TEST(VerifyArgsTest, FormatByteDifference) {
  EXPECT_EQ(FormatByteDifference(8, 1, 2), "byte 8: graph 1, eager 2");
  EXPECT_EQ(FormatByteDifference(2147483653, 255, 0), "byte 2147483653: graph 255, eager 0");
}

}  // namespace
}  // namespace encore
