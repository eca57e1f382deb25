// SPDX-License-Identifier: Apache-2.0
#include "graph/pad_rows.h"  // private to graph/

#include <atomic>
#include <cstring>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"

namespace encore {
namespace {

// Bytes between rows, and bytes of one row, of a tensor whose dim 0 is
// outermost (pad_policy's CheckRowsArePrefix).
RowGeometry GeometryOf(const TensorRef& t) {
  TensorRef one = t;
  one.shape[0] = 1;
  const Strides st = t.effective_strides();
  return RowGeometry{static_cast<uint64_t>(st[0]) * DTypeSize(t.dtype), one.span_bytes()};
}

}  // namespace

Status PadRows::Prepare(const std::string& method) {
  if (host_) return OkStatus();
  // Portable and mapped: the graph may launch on streams of any device's
  // context that shares it, and reads the slot over the bus.
  StatusOr<PinnedHostMemory> m =
      PinnedHostMemory::Allocate(sizeof(PadRowsShared), cudaHostAllocMapped | cudaHostAllocPortable);
  if (!m.ok()) {
    return Status(m.status().code(), "method '" + method + "': padded rows ring: " + std::string(m.status().message()));
  }
  void* device = nullptr;
  cudaError_t err = cuda().HostGetDevicePointer(&device, m->get(), 0);
  if (err != cudaSuccess) {
    return CudaStatus(err, CudaCallName(CudaCall::kHostGetDevicePointer), "method '" + method + "': padded rows ring");
  }
  std::memset(m->get(), 0, sizeof(PadRowsShared));
  memory_ = *std::move(m);
  host_ = memory_.as<PadRowsShared>();
  device_ = static_cast<PadRowsShared*>(device);
  launches_ = 0;
  return OkStatus();
}

bool PadRows::behind() const {
  const volatile PadRowsShared* r = host_;
  return launches_ - r->launches >= PadRowsShared::kSlots;
}

void PadRows::Stage(int64_t rows) {
  volatile PadRowsShared* r = host_;
  r->rows[launches_ % PadRowsShared::kSlots] = static_cast<uint64_t>(rows);
  // Written before the launch that reads it is queued.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void SetPadRowsHead(StageParams& p, PadRowsShared* rows, uint64_t* launch_slot, uint64_t* bytes_table,
                    std::span<const TensorRef> graph_inputs, std::span<const TensorRef> graph_outputs, size_t first) {
  p.rows = rows;
  p.launch_slot = launch_slot;
  p.bytes_table = bytes_table;
  for (int k = 0; k < p.count; ++k) p.in_rows[k] = GeometryOf(graph_inputs[first + k]);
  for (int k = 0; k < p.publish_count; ++k) p.out_rows[k] = GeometryOf(graph_outputs[first + k]);
}

}  // namespace encore
