// SPDX-License-Identifier: Apache-2.0
// RegionChecksums on a GPU: every block's checksum equals the host
// reference for every base alignment, size and CTA split; single bit flips
// at the start, middle and end of regions (partial last blocks, 1-byte
// aligned odd sizes) are found and located; the skip mask is honoured;
// ChangedBlocks lists exactly the modified blocks; verdicts describe the
// latest launch only, also from a replayed graph.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "encore/graph/verify/internal/checksum_hash.h"
#include "encore/graph/verify/internal/region_checksums.h"
#include "encore/graph/verify/internal/verify_test_util.h"

namespace encore {
namespace {

using testing::DeviceBuffer;
using testing::FlipBit;

constexpr size_t kMiB = kChecksumBlockBytes;

class RegionChecksumsTest : public testing::GpuStreamTest {
 protected:
  // `host_` uploaded to a device buffer with 64 spare bytes each side.
  void Upload(size_t n, uint32_t seed) {
    host_ = testing::RandomBytes(n, seed);
    dev_ = std::make_unique<DeviceBuffer<>>(n + 128);
    ASSERT_TRUE(dev_->ok());
    ASSERT_EQ(testing::ToDevice(at(0), host_.data(), n), cudaSuccess);
  }
  std::byte* at(size_t offset) const { return dev_->get() + 64 + offset; }

  RegionChecksums Make(std::vector<ChecksumRegion> regions, RegionChecksumsOptions o = {}) {
    auto c = RegionChecksums::Create(std::move(regions), o, s());
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : RegionChecksums();
  }
  ChecksumVerdict Verdict(RegionChecksums& c) {
    auto v = c.ReadVerdict(s());
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : ChecksumVerdict{};
  }

  std::vector<std::byte> host_;
  std::unique_ptr<DeviceBuffer<>> dev_;
};

// Regions of every alignment class (16, 8, 4, 2 and 1 bytes) and sizes with
// partial words, partial blocks and exact blocks, all in one object.
std::vector<ChecksumRegion> MixedRegions(const std::byte* base) {
  std::vector<ChecksumRegion> r;
  const size_t offsets[] = {0, 1, 2, 3, 4, 5, 8, 12};
  const size_t sizes[] = {1, 7, 8, 13, 16, 17, 24, 4101, kMiB, kMiB + 3, 2 * kMiB + 1001};
  for (size_t o : offsets) {
    for (size_t n : sizes) r.push_back({base + o, n, "o" + std::to_string(o) + "n" + std::to_string(n)});
  }
  r.push_back({base, 0, "empty"});
  return r;
}

TEST_F(RegionChecksumsTest, EveryBlockMatchesTheHostReference) {
  Upload(2 * kMiB + 1024 + 16, 1);
  for (int parts : {0, 1, 3, checksum::kMaxParts}) {
    RegionChecksumsOptions o;
    o.ctas_per_block = parts;
    RegionChecksums c = Make(MixedRegions(at(0)), o);
    ASSERT_GT(c.num_blocks(), 0);
    ASSERT_TRUE(c.Compute(1, s()).ok());
    auto sums = c.ReadChecksums(1, 0, c.num_blocks(), s());
    ASSERT_TRUE(sums.ok()) << sums.status();
    for (int64_t b = 0; b < c.num_blocks(); ++b) {
      auto where = c.map().Locate(b);
      ASSERT_TRUE(where.ok());
      const std::byte* p = reinterpret_cast<const std::byte*>(c.map().BlockData(*where));
      const uint64_t want = checksum::HostBlockChecksum(host_.data() + (p - at(0)), where->bytes);
      ASSERT_EQ((*sums)[b], want) << "parts " << parts << " block " << b << " region "
                                  << c.map().region(where->region).name << " offset " << where->offset;
    }
  }
}

TEST_F(RegionChecksumsTest, IdenticalDataGivesIdenticalChecksums) {
  Upload(3 * kMiB + 5, 2);
  DeviceBuffer<> copy(3 * kMiB + 5 + 1);
  ASSERT_TRUE(copy.ok());
  ASSERT_EQ(testing::ToDevice(copy.get() + 1, host_.data(), host_.size()), cudaSuccess);
  RegionChecksums c = Make({{at(0), host_.size(), "a"}, {copy.get() + 1, host_.size(), "b"}});
  ASSERT_TRUE(c.Compute(0, s()).ok());
  auto sums = c.ReadChecksums(0, 0, c.num_blocks(), s());
  ASSERT_TRUE(sums.ok());
  ASSERT_EQ(c.num_blocks(), 8);
  for (int b = 0; b < 4; ++b) EXPECT_EQ((*sums)[b], (*sums)[b + 4]) << b;
  // Nothing changed: a recompute compares equal, fused and separately.
  ASSERT_TRUE(c.ComputeAndCompare(1, 0, false, s()).ok());
  ChecksumVerdict v = Verdict(c);
  EXPECT_EQ(v.differing_blocks, 0);
  EXPECT_EQ(v.first_block, -1);
  ASSERT_TRUE(c.CompareWith(1, 0, false, s()).ok());
  EXPECT_EQ(Verdict(c).differing_blocks, 0);
}

TEST_F(RegionChecksumsTest, SingleBitFlipsAreFoundAndLocated) {
  // a: 16-byte aligned, 3 MiB + 5 (partial last block); b: 1-byte aligned,
  // odd size.
  const size_t na = 3 * kMiB + 5, nb = kMiB + 777;
  Upload(na + 2 + nb, 3);
  struct Flip {
    size_t region, offset;
    int bit;
  };
  const std::vector<Flip> flips = {{0, 0, 0},        {0, 3 * kMiB / 2, 7}, {0, na - 1, 3},
                                   {0, 3 * kMiB, 1}, {0, 2 * kMiB - 1, 6}, {1, 0, 0},
                                   {1, nb / 2, 5},   {1, nb - 1, 7},       {1, kMiB, 2}};
  for (int parts : {0, 1, 7}) {
    RegionChecksumsOptions o;
    o.ctas_per_block = parts;
    RegionChecksums c = Make({{at(0), na, "a"}, {at(na + 2), nb, "b"}}, o);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(at(na + 2)) & 1, 1u);
    ASSERT_TRUE(c.Compute(0, s()).ok());
    for (const Flip& f : flips) {
      std::byte* p = f.region == 0 ? at(f.offset) : at(na + 2 + f.offset);
      FlipBit(p, f.bit);
      ASSERT_TRUE(c.ComputeAndCompare(1, 0, false, s()).ok());
      ChecksumVerdict v = Verdict(c);
      auto want = c.map().BlockOf(f.region, f.offset);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(v.differing_blocks, 1) << "region " << f.region << " offset " << f.offset << " parts " << parts;
      EXPECT_EQ(v.first_block, *want);
      EXPECT_EQ(v.region, f.region);
      EXPECT_EQ(v.offset_in_region, f.offset / kMiB * kMiB);
      FlipBit(p, f.bit);
      ASSERT_TRUE(c.ComputeAndCompare(1, 0, false, s()).ok());
      EXPECT_EQ(Verdict(c).differing_blocks, 0) << "after flipping back";
    }
  }
}

TEST_F(RegionChecksumsTest, SwappedWordsAreFound) {
  Upload(kMiB, 4);
  RegionChecksums c = Make({{at(0), kMiB, "a"}});
  ASSERT_TRUE(c.Compute(0, s()).ok());
  std::vector<std::byte> swapped = host_;
  std::swap_ranges(swapped.begin() + 800, swapped.begin() + 808, swapped.begin() + 4000);
  ASSERT_EQ(testing::ToDevice(at(0), swapped.data(), kMiB), cudaSuccess);
  ASSERT_TRUE(c.ComputeAndCompare(1, 0, false, s()).ok());
  EXPECT_EQ(Verdict(c).differing_blocks, 1);
}

TEST_F(RegionChecksumsTest, SkipMaskIsHonoured) {
  Upload(5 * kMiB, 5);
  RegionChecksumsOptions o;
  o.skip_mask = true;
  o.list_capacity = 1;  // SetSkipBlocks uploads in chunks of one
  RegionChecksums c = Make({{at(0), 5 * kMiB, "a"}}, o);
  ASSERT_TRUE(c.Compute(0, s()).ok());
  FlipBit(at(kMiB + 10), 0);
  FlipBit(at(3 * kMiB + 10), 0);
  const std::vector<int64_t> skip1 = {1};
  ASSERT_TRUE(c.SetSkipBlocks(skip1, s()).ok());
  ASSERT_TRUE(c.ComputeAndCompare(1, 0, true, s()).ok());
  ChecksumVerdict v = Verdict(c);
  EXPECT_EQ(v.differing_blocks, 1);
  EXPECT_EQ(v.first_block, 3);
  ASSERT_TRUE(c.CompareWith(1, 0, false, s()).ok());
  v = Verdict(c);
  EXPECT_EQ(v.differing_blocks, 2);
  EXPECT_EQ(v.first_block, 1);
  const std::vector<int64_t> skip_both = {3, 1};
  ASSERT_TRUE(c.SetSkipBlocks(skip_both, s()).ok());
  ASSERT_TRUE(c.CompareWith(1, 0, true, s()).ok());
  v = Verdict(c);
  EXPECT_EQ(v.differing_blocks, 0);
  EXPECT_EQ(v.first_block, -1);
  ASSERT_TRUE(c.SetSkipBlocks({}, s()).ok());
  ASSERT_TRUE(c.ComputeAndCompare(1, 0, true, s()).ok());
  EXPECT_EQ(Verdict(c).differing_blocks, 2);
  const std::vector<int64_t> outside = {5};
  EXPECT_EQ(c.SetSkipBlocks(outside, s()).code(), StatusCode::kInvalidArgument);
}

TEST_F(RegionChecksumsTest, ChangedBlocksListsExactlyTheModifiedBlocks) {
  Upload(9 * kMiB + 100, 6);
  RegionChecksumsOptions o;
  o.list_capacity = 8;
  RegionChecksums c = Make({{at(0), 4 * kMiB, "a"}, {at(4 * kMiB), 5 * kMiB + 100, "b"}}, o);
  ASSERT_EQ(c.num_blocks(), 10);
  ASSERT_TRUE(c.Compute(0, s()).ok());
  for (size_t off : {size_t{0}, 3 * kMiB + 1, 7 * kMiB + 99999, 9 * kMiB + 99}) FlipBit(at(off), 4);
  ASSERT_TRUE(c.Compute(1, s()).ok());
  auto all = c.ChangedBlocks(0, 1, 8, s());
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->blocks, (std::vector<int64_t>{0, 3, 7, 9}));
  EXPECT_EQ(all->total, 4);
  EXPECT_FALSE(all->truncated());
  auto two = c.ChangedBlocks(1, 0, 2, s());
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->blocks, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(two->total, 4);
  EXPECT_TRUE(two->truncated());
  auto none = c.ChangedBlocks(0, 0, 8, s());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->blocks.empty());
  EXPECT_EQ(none->total, 0);
  EXPECT_EQ(c.ChangedBlocks(0, 1, 9, s()).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RegionChecksumsTest, ManyChangedBlocksAcrossListIterations) {
  // More blocks than the list kernel's 1024 threads: its running base.
  Upload(2500 * 64, 7);
  std::vector<ChecksumRegion> regions;
  for (int i = 0; i < 2500; ++i) regions.push_back({at(64 * i), 64, "r" + std::to_string(i)});
  RegionChecksumsOptions o;
  o.list_capacity = 4096;
  RegionChecksums c = Make(std::move(regions), o);
  ASSERT_EQ(c.num_blocks(), 2500);
  ASSERT_TRUE(c.Compute(0, s()).ok());
  std::vector<int64_t> want;
  for (int64_t b = 5; b < 2500; b += 7) {
    FlipBit(at(64 * b + 63), 1);
    want.push_back(b);
  }
  ASSERT_TRUE(c.ComputeAndCompare(1, 0, false, s()).ok());
  ChecksumVerdict v = Verdict(c);
  EXPECT_EQ(v.differing_blocks, static_cast<int64_t>(want.size()));
  EXPECT_EQ(v.first_block, 5);
  EXPECT_EQ(v.region, 5u);
  auto listed = c.ChangedBlocks(0, 1, 4096, s());
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->blocks, want);
}

TEST_F(RegionChecksumsTest, VerdictDescribesTheLatestLaunchOnly) {
  Upload(2 * kMiB, 8);
  RegionChecksums c = Make({{at(0), 2 * kMiB, "a"}}, {.slots = 3});
  ASSERT_TRUE(c.Compute(0, s()).ok());
  ASSERT_TRUE(c.Compute(2, s()).ok());
  FlipBit(at(kMiB), 0);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(c.ComputeAndCompare(1, 0, false, s()).ok());
    ChecksumVerdict v = Verdict(c);
    EXPECT_EQ(v.differing_blocks, 1) << i;
    EXPECT_EQ(v.first_block, 1) << i;
    // Back-to-back launches without a read in between.
    ASSERT_TRUE(c.CompareWith(0, 2, false, s()).ok());
    ASSERT_TRUE(c.CompareWith(1, 2, false, s()).ok());
    ASSERT_TRUE(c.CompareWith(0, 2, false, s()).ok());
    EXPECT_EQ(Verdict(c).differing_blocks, 0) << i;
  }
}

TEST_F(RegionChecksumsTest, WorksInACapturedGraph) {
  Upload(3 * kMiB, 9);
  RegionChecksums c = Make({{at(0), 3 * kMiB, "a"}});
  ASSERT_TRUE(c.Compute(0, s()).ok());
  ENCORE_CUDA_ASSERT(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  Status in_capture = c.ComputeAndCompare(1, 0, false, s());
  Status read = c.ReadVerdict(s()).status();
  cudaGraph_t g = nullptr;
  ENCORE_CUDA_ASSERT(cudaStreamEndCapture(s(), &g));
  ASSERT_TRUE(in_capture.ok()) << in_capture;
  EXPECT_EQ(read.code(), StatusCode::kFailedPrecondition) << read;
  cudaGraphExec_t exec = nullptr;
  ENCORE_CUDA_ASSERT(cudaGraphInstantiateWithFlags(&exec, g, 0));
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
  EXPECT_EQ(Verdict(c).differing_blocks, 0);
  FlipBit(at(2 * kMiB + 5), 2);
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
  ChecksumVerdict v = Verdict(c);
  EXPECT_EQ(v.differing_blocks, 1);
  EXPECT_EQ(v.first_block, 2);
  FlipBit(at(2 * kMiB + 5), 2);
  ENCORE_CUDA_ASSERT(cudaGraphLaunch(exec, s()));
  EXPECT_EQ(Verdict(c).differing_blocks, 0);
  ENCORE_CUDA_ASSERT(cudaGraphExecDestroy(exec));
  ENCORE_CUDA_ASSERT(cudaGraphDestroy(g));
}

}  // namespace
}  // namespace encore
