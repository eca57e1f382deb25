// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/verify/internal/block_snapshot.h"

#include <algorithm>
#include <string>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/verify/internal/device_io.h"

namespace encore {
namespace {

// As RegionChecksums: enough CTAs to spread few blocks over the GPU.
constexpr int64_t kTargetCtas = 2048;

}  // namespace

StatusOr<BlockSnapshot> BlockSnapshot::Create(const BlockMap& map, std::span<const int64_t> blocks,
                                              cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(map.ValidateBlockList(blocks, "BlockSnapshot blocks"));
  ENCORE_RETURN_IF_ERROR(verify_io::RefuseInCapture(stream, "BlockSnapshot::Create"));
  BlockSnapshot s;
  s.blocks_.assign(blocks.begin(), blocks.end());
  std::vector<snapshot::Entry> entries(blocks.size());
  for (size_t j = 0; j < blocks.size(); ++j) {
    ENCORE_ASSIGN_OR_RETURN(BlockLocation where, map.Locate(blocks[j]));
    // Restore writes the regions; the map keeps them as read-only views.
    entries[j].region = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(map.BlockData(where)));
    entries[j].bytes = where.bytes;
    entries[j].buffer_offset = s.snapshot_bytes_;
    s.snapshot_bytes_ += (where.bytes + 15) / 16 * 16;
  }
  const int64_t n = static_cast<int64_t>(blocks.size());
  s.parts_ =
      static_cast<int>(std::clamp<int64_t>((kTargetCtas + n - 1) / std::max<int64_t>(n, 1), 1, snapshot::kMaxParts));
  verify_io::Layout layout;
  const size_t table = layout.Add(entries.size() * sizeof(snapshot::Entry));
  const size_t buffer = layout.Add(s.snapshot_bytes_);
  const size_t difference = layout.Add(sizeof(snapshot::DeviceDifference));
  ENCORE_ASSIGN_OR_RETURN(s.memory_, DeviceMemory::Allocate(layout.total()));
  std::byte* base = s.memory_.as<std::byte>();
  s.entries_ = reinterpret_cast<snapshot::Entry*>(base + table);
  s.buffer_ = reinterpret_cast<unsigned char*>(base + buffer);
  s.difference_ = reinterpret_cast<snapshot::DeviceDifference*>(base + difference);
  ENCORE_CUDA_CALL(MemsetAsync, s.difference_, 0, sizeof(snapshot::DeviceDifference), stream);
  ENCORE_RETURN_IF_ERROR(verify_io::Upload(s.entries_, entries.data(), entries.size() * sizeof(snapshot::Entry), stream,
                                           "BlockSnapshot::Create"));
  ENCORE_CUDA_CALL(StreamSynchronize, stream);
  s.map_ = map;
  s.device_bytes_ = layout.total();
  return s;
}

Status BlockSnapshot::Launch(snapshot::Op op, cudaStream_t stream) {
  if (blocks_.empty()) return OkStatus();
  const snapshot::Params p{entries_, buffer_, parts_, op, difference_};
  const cudaError_t err = snapshot::LaunchSnapshot(p, static_cast<int64_t>(blocks_.size()), stream);
  if (err != cudaSuccess) return CudaStatus(err, "block snapshot kernel launch");
  return OkStatus();
}

Status BlockSnapshot::Save(cudaStream_t stream) { return Launch(snapshot::Op::kSave, stream); }
Status BlockSnapshot::Restore(cudaStream_t stream) { return Launch(snapshot::Op::kRestore, stream); }
Status BlockSnapshot::Compare(cudaStream_t stream) { return Launch(snapshot::Op::kCompare, stream); }

StatusOr<SnapshotDifference> BlockSnapshot::ReadDifference(cudaStream_t stream) {
  snapshot::DeviceDifference d{};
  ENCORE_RETURN_IF_ERROR(verify_io::ReadBack(&d, difference_, sizeof d, stream, "BlockSnapshot::ReadDifference"));
  SnapshotDifference out;
  if (d.first_inv == 0) return out;
  const unsigned long long key = ~d.first_inv;
  const size_t j = key / kChecksumBlockBytes;
  if (j >= blocks_.size()) return InternalError("BlockSnapshot: the device named listed block " + std::to_string(j));
  ENCORE_ASSIGN_OR_RETURN(BlockLocation where, map_.Locate(blocks_[j]));
  out.differs = true;
  out.block = blocks_[j];
  out.region = where.region;
  out.offset_in_region = where.offset + key % kChecksumBlockBytes;
  out.saved = d.saved;
  out.current = d.current;
  return out;
}

}  // namespace encore
