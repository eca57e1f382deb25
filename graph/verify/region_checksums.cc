// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/region_checksums.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/verify/internal/device_io.h"

namespace encore {
namespace {

using checksum::DeviceRegion;
using checksum::DeviceVerdict;

// CTAs per launch to aim for: several per SM on an H200 (132 SMs), so few
// large blocks still spread over the whole GPU.
constexpr int64_t kTargetCtas = 2048;

int64_t MaskWords(int64_t blocks) { return (blocks + 31) / 32; }

Status ValidateOptions(const RegionChecksumsOptions& o) {
  if (o.slots < 1) {
    return InvalidArgumentError("RegionChecksums: slots is " + std::to_string(o.slots) + ", at least 1 is needed");
  }
  if (o.list_capacity == 0) return InvalidArgumentError("RegionChecksums: list_capacity is 0");
  if (o.ctas_per_block < 0 || o.ctas_per_block > checksum::kMaxParts) {
    return InvalidArgumentError("RegionChecksums: ctas_per_block is " + std::to_string(o.ctas_per_block) +
                                ", outside [0, " + std::to_string(checksum::kMaxParts) + "]");
  }
  return OkStatus();
}

int PartsFor(int64_t num_blocks, int requested) {
  if (requested > 0) return requested;
  const int64_t parts = (kTargetCtas + num_blocks - 1) / std::max<int64_t>(num_blocks, 1);
  return static_cast<int>(std::clamp<int64_t>(parts, 1, checksum::kMaxParts));
}

}  // namespace

StatusOr<RegionChecksums> RegionChecksums::Create(std::vector<ChecksumRegion> regions, RegionChecksumsOptions options,
                                                  cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(ValidateOptions(options));
  ENCORE_ASSIGN_OR_RETURN(BlockMap map, BlockMap::Create(std::move(regions)));
  const int64_t nb = map.num_blocks();
  RegionChecksums c;
  c.parts_ = PartsFor(nb, options.ctas_per_block);
  if (nb * c.parts_ > INT32_MAX) {
    return InvalidArgumentError("RegionChecksums: " + std::to_string(nb) + " blocks times " + std::to_string(c.parts_) +
                                " CTAs each exceed a grid");
  }
  ENCORE_RETURN_IF_ERROR(verify_io::RefuseInCapture(stream, "RegionChecksums::Create"));
  const size_t nr = map.num_regions();
  verify_io::Layout layout;
  const size_t table = layout.Add(nr * sizeof(DeviceRegion));
  const size_t slots = layout.Add(static_cast<size_t>(options.slots) * nb * sizeof(uint64_t));
  const size_t partial = layout.Add(nb * sizeof(unsigned long long));
  const size_t arrivals = layout.Add(nb * sizeof(unsigned int));
  const size_t skip = layout.Add(options.skip_mask ? MaskWords(nb) * sizeof(uint32_t) : 0);
  const size_t list = layout.Add(options.list_capacity * sizeof(int64_t));
  const size_t count = layout.Add(sizeof(unsigned long long));
  const size_t verdict = layout.Add(sizeof(DeviceVerdict));
  ENCORE_ASSIGN_OR_RETURN(c.memory_, DeviceMemory::Allocate(layout.total()));
  std::byte* base = c.memory_.as<std::byte>();
  c.table_ = reinterpret_cast<DeviceRegion*>(base + table);
  c.slots_ = reinterpret_cast<uint64_t*>(base + slots);
  c.partial_ = reinterpret_cast<unsigned long long*>(base + partial);
  c.arrivals_ = reinterpret_cast<unsigned int*>(base + arrivals);
  c.skip_ = options.skip_mask ? reinterpret_cast<uint32_t*>(base + skip) : nullptr;
  c.list_ = reinterpret_cast<int64_t*>(base + list);
  c.list_count_ = reinterpret_cast<unsigned long long*>(base + count);
  c.verdict_ = reinterpret_cast<DeviceVerdict*>(base + verdict);
  // The kernels rely on zeroed partial sums, arrival counts and verdict.
  ENCORE_CUDA_CALL(MemsetAsync, base, 0, layout.total(), stream);
  std::vector<DeviceRegion> host(nr);
  for (size_t i = 0; i < nr; ++i) {
    host[i] = {static_cast<const unsigned char*>(map.region(i).data), map.region(i).bytes, map.first_block(i)};
  }
  ENCORE_RETURN_IF_ERROR(
      verify_io::Upload(c.table_, host.data(), nr * sizeof(DeviceRegion), stream, "RegionChecksums::Create"));
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  c.map_ = std::move(map);
  c.options_ = options;
  c.device_bytes_ = layout.total();
  return c;
}

Status RegionChecksums::CheckSlot(int slot, std::string_view what) const {
  if (slot < 0 || slot >= options_.slots) {
    return InvalidArgumentError("RegionChecksums: " + std::string(what) + " " + std::to_string(slot) +
                                " is outside [0, " + std::to_string(options_.slots) + ")");
  }
  return OkStatus();
}

Status RegionChecksums::CheckPair(int slot, int reference, bool use_skip_mask) const {
  ENCORE_RETURN_IF_ERROR(CheckSlot(slot, "slot"));
  ENCORE_RETURN_IF_ERROR(CheckSlot(reference, "reference slot"));
  if (slot == reference) {
    return InvalidArgumentError("RegionChecksums: slot " + std::to_string(slot) + " compared with itself");
  }
  if (use_skip_mask && skip_ == nullptr) {
    return FailedPreconditionError("RegionChecksums: a skip mask was asked for but options.skip_mask was false");
  }
  return OkStatus();
}

Status RegionChecksums::Launch(int slot, const uint64_t* reference, bool use_skip_mask, cudaStream_t stream) {
  if (num_blocks() == 0) return OkStatus();
  checksum::ChecksumParams p{};
  p.regions = table_;
  p.num_regions = static_cast<int>(map_.num_regions());
  p.parts = parts_;
  p.out = slot_data(slot);
  p.ref = reference;
  p.skip = use_skip_mask ? skip_ : nullptr;
  p.partial = partial_;
  p.arrivals = arrivals_;
  p.verdict = verdict_;
  const cudaError_t err = checksum::LaunchBlockChecksums(p, num_blocks(), stream);
  if (err != cudaSuccess) return CudaStatus(err, "region checksum kernel launch");
  return OkStatus();
}

Status RegionChecksums::Compute(int slot, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSlot(slot, "slot"));
  return Launch(slot, nullptr, false, stream);
}

Status RegionChecksums::ComputeAndCompare(int slot, int reference, bool use_skip_mask, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckPair(slot, reference, use_skip_mask));
  return Launch(slot, slot_data(reference), use_skip_mask, stream);
}

Status RegionChecksums::CompareWith(int slot, int reference, bool use_skip_mask, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckPair(slot, reference, use_skip_mask));
  if (num_blocks() == 0) return OkStatus();
  const cudaError_t err = checksum::LaunchCompareSlots(slot_data(slot), slot_data(reference),
                                                       use_skip_mask ? skip_ : nullptr, num_blocks(), verdict_, stream);
  if (err != cudaSuccess) return CudaStatus(err, "checksum compare kernel launch");
  return OkStatus();
}

Status RegionChecksums::SetSkipBlocks(std::span<const int64_t> blocks, cudaStream_t stream) {
  if (skip_ == nullptr) {
    return FailedPreconditionError("RegionChecksums::SetSkipBlocks: options.skip_mask was false");
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i] < 0 || blocks[i] >= num_blocks()) {
      return InvalidArgumentError("RegionChecksums::SetSkipBlocks: entry " + std::to_string(i) + " is block " +
                                  std::to_string(blocks[i]) + ", outside [0, " + std::to_string(num_blocks()) + ")");
    }
  }
  ENCORE_RETURN_IF_ERROR(verify_io::RefuseInCapture(stream, "RegionChecksums::SetSkipBlocks"));
  ENCORE_CUDA_CALL(MemsetAsync, skip_, 0, MaskWords(num_blocks()) * sizeof(uint32_t), stream);
  // In chunks through the list buffer: stream order keeps each chunk's
  // upload behind the kernel that read the one before.
  // Each chunk goes through a pageable copy, which CUDA reads before
  // cudaMemcpyAsync returns: the caller's list may be pinned memory that it
  // reuses as soon as this returns.
  std::vector<int64_t> chunk;
  for (size_t at = 0; at < blocks.size(); at += options_.list_capacity) {
    const size_t n = std::min(options_.list_capacity, blocks.size() - at);
    chunk.assign(blocks.begin() + at, blocks.begin() + at + n);
    ENCORE_RETURN_IF_ERROR(
        verify_io::Upload(list_, chunk.data(), n * sizeof(int64_t), stream, "RegionChecksums::SetSkipBlocks"));
    const cudaError_t err = checksum::LaunchSetMaskBits(list_, n, skip_, stream);
    if (err != cudaSuccess) return CudaStatus(err, "skip mask kernel launch");
  }
  return OkStatus();
}

StatusOr<ChecksumVerdict> RegionChecksums::ReadVerdict(cudaStream_t stream) {
  DeviceVerdict v{};
  ENCORE_RETURN_IF_ERROR(verify_io::ReadBack(&v, verdict_, sizeof v, stream, "RegionChecksums::ReadVerdict"));
  ChecksumVerdict out;
  out.differing_blocks = static_cast<int64_t>(v.count);
  if (v.first_inv == 0) return out;
  out.first_block = static_cast<int64_t>(~v.first_inv);
  ENCORE_ASSIGN_OR_RETURN(BlockLocation where, map_.Locate(out.first_block));
  out.region = where.region;
  out.offset_in_region = where.offset;
  return out;
}

StatusOr<BlockList> RegionChecksums::ChangedBlocks(int a, int b, size_t max_blocks, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSlot(a, "slot"));
  ENCORE_RETURN_IF_ERROR(CheckSlot(b, "slot"));
  if (max_blocks > options_.list_capacity) {
    return InvalidArgumentError("RegionChecksums::ChangedBlocks: max_blocks " + std::to_string(max_blocks) +
                                " is above list_capacity " + std::to_string(options_.list_capacity));
  }
  ENCORE_RETURN_IF_ERROR(verify_io::RefuseInCapture(stream, "RegionChecksums::ChangedBlocks"));
  BlockList out;
  if (num_blocks() == 0) return out;
  const cudaError_t err =
      checksum::LaunchListChanged(slot_data(a), slot_data(b), num_blocks(), list_, max_blocks, list_count_, stream);
  if (err != cudaSuccess) return CudaStatus(err, "changed-block list kernel launch");
  unsigned long long total = 0;
  ENCORE_RETURN_IF_ERROR(verify_io::ReadBack(&total, list_count_, sizeof total, stream, "ChangedBlocks"));
  out.total = static_cast<int64_t>(total);
  out.blocks.resize(std::min<size_t>(total, max_blocks));
  ENCORE_RETURN_IF_ERROR(
      verify_io::ReadBack(out.blocks.data(), list_, out.blocks.size() * sizeof(int64_t), stream, "ChangedBlocks"));
  return out;
}

StatusOr<std::vector<uint64_t>> RegionChecksums::ReadChecksums(int slot, int64_t first, size_t count,
                                                               cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(CheckSlot(slot, "slot"));
  if (first < 0 || first > num_blocks() || count > static_cast<size_t>(num_blocks() - first)) {
    return InvalidArgumentError("RegionChecksums::ReadChecksums: blocks [" + std::to_string(first) + ", +" +
                                std::to_string(count) + ") are not within [0, " + std::to_string(num_blocks()) + ")");
  }
  std::vector<uint64_t> out(count);
  ENCORE_RETURN_IF_ERROR(verify_io::ReadBack(out.data(), slot_data(slot) + first, count * sizeof(uint64_t), stream,
                                             "RegionChecksums::ReadChecksums"));
  return out;
}

}  // namespace encore
