#include "encore/shims/mapped_check_record.h"

#include <atomic>
#include <utility>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/log.h"

namespace encore::shims {

StatusOr<MappedCheckRecord> MappedCheckRecord::Create() {
  void* host = nullptr;
  // Portable: checks may run on streams of any device.
  ENCORE_CUDA_CALL(HostAlloc, &host, sizeof(CheckRecord), cudaHostAllocMapped | cudaHostAllocPortable);
  void* device = nullptr;
  cudaError_t err = cuda().HostGetDevicePointer(&device, host, 0);
  if (err != cudaSuccess) {
    (void)cuda().FreeHost(host);
    return CudaStatus(err, CudaCallName(CudaCall::kHostGetDevicePointer));
  }
  MappedCheckRecord record(static_cast<CheckRecord*>(host), static_cast<CheckRecord*>(device));
  record.Clear();
  return record;
}

MappedCheckRecord::MappedCheckRecord(MappedCheckRecord&& other) noexcept
    : host_(std::exchange(other.host_, nullptr)), device_(std::exchange(other.device_, nullptr)) {}

MappedCheckRecord& MappedCheckRecord::operator=(MappedCheckRecord&& other) noexcept {
  if (this != &other) {
    Reset();
    host_ = std::exchange(other.host_, nullptr);
    device_ = std::exchange(other.device_, nullptr);
  }
  return *this;
}

MappedCheckRecord::~MappedCheckRecord() { Reset(); }

void MappedCheckRecord::Reset() {
  if (host_ == nullptr) return;
  cudaError_t err = cuda().FreeHost(host_);
  host_ = nullptr;
  device_ = nullptr;
  if (err != cudaSuccess) {
    EventLog().Error("destroy_failed", {{"what", "check_record"}, {"error", cudaGetErrorName(err)}});
  }
}

void MappedCheckRecord::Clear() {
  if (host_ == nullptr) return;
  volatile CheckRecord* r = host_;
  r->check_id = 0;
  r->seq = 0;
  r->call_index = 0;
  // The fields are clean before a check can see `failed` at 0 again.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  r->failed = 0;
}

}  // namespace encore::shims
