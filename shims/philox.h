// SPDX-License-Identifier: Apache-2.0
// A counter-based random generator (Philox4x32-10) whose position lives on
// the device, so a draw captured into a CUDA graph draws fresh numbers on every
// replay, and whose default seed comes from std::random_device, so processes
// started together draw different streams.
#ifndef ENCORE_SHIMS_PHILOX_H_
#define ENCORE_SHIMS_PHILOX_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "encore/core/cuda_handle.h"
#include "encore/core/status.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace encore::shims {

namespace internal {
struct PhiloxState;
struct PhiloxStateTraits {
  using Handle = PhiloxState*;
  static cudaError_t Destroy(PhiloxState* state);
  static constexpr std::string_view kWhat = "philox_state";
};
}  // namespace internal

struct PhiloxOptions {
  // Where init failures and destructor errors go; null means the logger of
  // the method whose call this is (the application's, see LogScope), else
  // encore's default logger.
  std::shared_ptr<spdlog::logger> logger;
  // Passed to std::random_device when no seed is given; empty means its
  // default source. (An unknown token makes it throw, which tests use.)
  std::string random_device_token;
};

// Element i of a draw of n values comes from Philox4x32-10 with key = seed
// and counter = offset + i / 4 (word i % 4), where `offset` is the device
// offset when the draw runs; the draw then moves the offset on by
// ceil(n / 4). philox_reference.h holds the same function for the CPU.
//
// One generator serves one stream at a time: two draws in flight together on
// different streams race on the offset.
class Philox {
 public:
  // Does no device work. The first draw allocates the device state and copies
  // the seed there (seeding from std::random_device when `seed` is empty),
  // which needs a host sync, so that first draw must happen outside a capture
  // (inside one it returns CaptureRefusal). If that setup fails, the draw logs
  // event=philox_init_failed at error, frees what it allocated and returns
  // the error; the next draw tries again.
  static StatusOr<Philox> Create(std::optional<uint64_t> seed = {}, PhiloxOptions options = {});

  Philox(Philox&& other) noexcept = default;
  Philox& operator=(Philox&& other) noexcept;
  Philox(const Philox&) = delete;
  Philox& operator=(const Philox&) = delete;
  // Frees the device state; an error is logged, never thrown. A graph that
  // captured a draw of this generator must be destroyed first.
  ~Philox();

  // n floats in [0, 1), multiples of 2^-24, into device memory `out`, queued
  // on `stream`. Capturable once the generator is set up. n == 0 does
  // nothing; n < 0 or a null `out` is InvalidArgument.
  Status Uniform(float* out, int64_t n, cudaStream_t stream);
  // n standard normal floats (Box-Muller on pairs of words), as Uniform.
  Status Normal(float* out, int64_t n, cudaStream_t stream);

  // The device offset in 4-wide counters, after the work queued on `stream`;
  // 0 before the first draw. Reads back to the host: CaptureRefusal inside a
  // capture.
  StatusOr<uint64_t> Offset(cudaStream_t stream);

  // The seed in use: the one given to Create, or the one drawn from
  // std::random_device once the first draw has set up the device state.
  std::optional<uint64_t> seed() const { return seed_; }
  bool initialized() const { return static_cast<bool>(state_); }

 private:
  Philox(std::optional<uint64_t> seed, PhiloxOptions options);
  Status Draw(bool normal, float* out, int64_t n, cudaStream_t stream);
  Status EnsureInitialized(cudaStream_t stream);
  Status Initialize(cudaStream_t stream);
  void FreeState();

  std::optional<uint64_t> seed_;
  PhiloxOptions options_;
  CudaHandle<internal::PhiloxStateTraits> state_;
};

}  // namespace encore::shims

#endif  // ENCORE_SHIMS_PHILOX_H_
