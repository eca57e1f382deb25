// SPDX-License-Identifier: Apache-2.0
// A region past 2 GiB (offsets beyond 32 bits, one CTA per block): the
// checksums match the host reference where sampled, a flipped bit past
// 2^31 and one in the partial last block are found and located, and
// DeviceDiff names a differing byte past 2^31. Skips when the GPU lacks the
// memory.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "encore/graph/verify/internal/checksum_hash.h"
#include "encore/graph/verify/internal/device_diff.h"
#include "encore/graph/verify/internal/region_checksums.h"
#include "encore/graph/verify/internal/verify_test_util.h"

namespace encore {
namespace {

using testing::DeviceBuffer;

constexpr size_t kMiB = kChecksumBlockBytes;
constexpr size_t kBytes = (size_t{2} << 30) + 4097;  // 2049 blocks, the last 4097 bytes
constexpr size_t kSpare = size_t{256} << 20;

class LargeRegionTest : public testing::GpuStreamTest {};

TEST_F(LargeRegionTest, TwoGiBRegion) {
  if (testing::FreeDeviceBytes() < kBytes + kSpare) GTEST_SKIP() << "needs " << (kBytes + kSpare) << " free bytes";
  DeviceBuffer<> region(kBytes);
  ASSERT_TRUE(region.ok());
  ENCORE_CUDA_ASSERT(cudaMemset(region.get(), 0x5a, kBytes));
  // Distinct content in the sampled blocks.
  const std::vector<int64_t> sampled = {0, 1024, 2047, 2048};
  for (int64_t b : sampled) {
    const size_t n = b == 2048 ? 4097 : kMiB;
    const std::vector<std::byte> r = testing::RandomBytes(n, static_cast<uint32_t>(b));
    ASSERT_EQ(testing::ToDevice(region.get() + b * kMiB, r.data(), n), cudaSuccess);
  }
  auto c = RegionChecksums::Create({{region.get(), kBytes, "weights"}}, {}, s());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->num_blocks(), 2049);
  ASSERT_TRUE(c->Compute(0, s()).ok());
  for (int64_t b : sampled) {
    const size_t n = b == 2048 ? 4097 : kMiB;
    std::vector<std::byte> host(n);
    ASSERT_EQ(testing::ToHost(host.data(), region.get() + b * kMiB, n), cudaSuccess);
    auto sum = c->ReadChecksums(0, b, 1, s());
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ((*sum)[0], checksum::HostBlockChecksum(host.data(), n)) << "block " << b;
  }
  const size_t past_2g = (size_t{1} << 31) + 5;
  for (size_t at : {past_2g, kBytes - 1}) {
    testing::FlipBit(region.get() + at, 6);
    ASSERT_TRUE(c->ComputeAndCompare(1, 0, false, s()).ok());
    auto v = c->ReadVerdict(s());
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->differing_blocks, 1) << at;
    EXPECT_EQ(v->first_block, static_cast<int64_t>(at / kMiB));
    EXPECT_EQ(v->offset_in_region, at / kMiB * kMiB);
    testing::FlipBit(region.get() + at, 6);
  }
  ASSERT_TRUE(c->ComputeAndCompare(1, 0, false, s()).ok());
  auto clean = c->ReadVerdict(s());
  ASSERT_TRUE(clean.ok());
  EXPECT_EQ(clean->differing_blocks, 0);

  if (testing::FreeDeviceBytes() < kBytes + kSpare) GTEST_SKIP() << "no room for a second copy for DeviceDiff";
  DeviceBuffer<> copy(kBytes);
  ASSERT_TRUE(copy.ok());
  ENCORE_CUDA_ASSERT(cudaMemcpy(copy.get(), region.get(), kBytes, cudaMemcpyDeviceToDevice));
  auto diff = DeviceDiff::Create(1, s());
  ASSERT_TRUE(diff.ok());
  ASSERT_TRUE(diff->EnqueueBytes(0, region.get(), copy.get(), kBytes, s()).ok());
  auto same = diff->Read(0, s());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, "");
  const uint8_t old = testing::ReadByte(copy.get() + past_2g);
  testing::WriteByte(copy.get() + past_2g, old ^ 0x20);
  ASSERT_TRUE(diff->EnqueueBytes(0, region.get(), copy.get(), kBytes, s()).ok());
  auto text = diff->Read(0, s());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, FormatByteDifference(static_cast<int64_t>(past_2g), old, old ^ 0x20));
  // The same bytes as a float32 tensor of 2^29 + 1024 elements.
  TensorRef t;
  t.dtype = DType::kFloat32;
  t.shape = {static_cast<int64_t>(kBytes / 4)};
  auto elem = diff->FirstDifference(t, region.get(), copy.get(), 0, s());
  ASSERT_TRUE(elem.ok());
  EXPECT_EQ(elem->rfind("element " + std::to_string(past_2g / 4) + ":", 0), 0u) << *elem;
}

}  // namespace
}  // namespace encore
