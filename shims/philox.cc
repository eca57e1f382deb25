// SPDX-License-Identifier: Apache-2.0
#include "encore/shims/philox.h"

#include <exception>
#include <random>
#include <string>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/device_state.h"
#include "encore/core/internal/log.h"
#include "encore/shims/internal/kernels.h"
#include "encore/shims/internal/readback.h"

namespace encore::shims {
namespace {

// Two independent 32-bit words: std::random_device yields unsigned int.
StatusOr<uint64_t> SeedFromRandomDevice(const std::string& token) {
  try {
    std::random_device rd = token.empty() ? std::random_device() : std::random_device(token);
    uint64_t hi = rd();
    uint64_t lo = rd();
    return (hi << 32) | lo;
  } catch (const std::exception& e) {
    return UnavailableError(std::string("Philox: std::random_device failed: ") + e.what());
  } catch (...) {
    return UnavailableError("Philox: std::random_device failed");
  }
}

}  // namespace

StatusOr<Philox> Philox::Create(std::optional<uint64_t> seed, PhiloxOptions options) {
  return Philox(seed, std::move(options));
}

Philox::Philox(std::optional<uint64_t> seed, PhiloxOptions options)
    : seed_(seed), options_(std::move(options)) {}

Philox& Philox::operator=(Philox&& other) noexcept {
  if (this != &other) {
    FreeState();
    seed_ = other.seed_;
    options_ = std::move(other.options_);
    state_ = std::move(other.state_);
  }
  return *this;
}

Philox::~Philox() { FreeState(); }

namespace {
// The generator's own logger if it has one; else the one of the method
// whose call this is (LogScope), so a Philox inside a method logs to the
// application's logger; else encore's default.
template <typename F>
void WithLog(const std::shared_ptr<spdlog::logger>& logger, F f) {
  if (logger) {
    f(EventLog(logger));
  } else {
    f(ScopedEventLog());
  }
}
}  // namespace

namespace internal {
cudaError_t PhiloxStateTraits::Destroy(PhiloxState* state) { return cuda().Free(state); }
}  // namespace internal

void Philox::FreeState() {
  // Destroyed here rather than by the handle, so the error goes to this
  // generator's logger.
  if (cudaError_t err = state_.Destroy(); err != cudaSuccess) {
    try {  // from a destructor: a logger that throws must not end the process
      WithLog(options_.logger, [&](const EventLog& log) {
        log.Error("destroy_failed", {{"what", "philox_state"}, {"error", cudaGetErrorName(err)}});
      });
    } catch (...) {
    }
  }
}

Status Philox::Uniform(float* out, int64_t n, cudaStream_t stream) { return Draw(false, out, n, stream); }
Status Philox::Normal(float* out, int64_t n, cudaStream_t stream) { return Draw(true, out, n, stream); }

Status Philox::Draw(bool normal, float* out, int64_t n, cudaStream_t stream) {
  // A literal: the eager path builds no string unless it fails.
  const char* name = normal ? "Philox::Normal" : "Philox::Uniform";
  if (n < 0) return InvalidArgumentError(std::string(name) + ": n is negative (" + std::to_string(n) + ")");
  if (n == 0) return OkStatus();
  if (out == nullptr) return InvalidArgumentError(std::string(name) + ": out is null with n = " + std::to_string(n));
  ENCORE_RETURN_IF_ERROR(EnsureInitialized(stream));
  // The draw advances the device offset: verification rewinds it before an
  // eager re-run of a captured draw.
  NoteDeviceState(state_.get(), sizeof(internal::PhiloxState), "philox_state");
  cudaError_t err = normal ? internal::LaunchPhiloxNormal(state_.get(), out, n, stream)
                           : internal::LaunchPhiloxUniform(state_.get(), out, n, stream);
  if (err != cudaSuccess) return CudaStatus(err, std::string(name) + " kernel launch");
  return OkStatus();
}

Status Philox::EnsureInitialized(cudaStream_t stream) {
  if (state_) return OkStatus();
  Status st = Initialize(stream);
  // A refusal is the expected answer inside a capture, not a failure.
  if (!st.ok() && !IsCaptureRefusal(st)) {
    WithLog(options_.logger, [&](const EventLog& log) {
      log.Error("philox_init_failed", {{"reason", st.message()},
                                      {"code", StatusCodeName(st.code())},
                                      {"seeded", seed_.has_value() ? "explicit" : "random_device"}});
    });
  }
  return st;
}

Status Philox::Initialize(cudaStream_t stream) {
  uint64_t seed = 0;
  if (seed_.has_value()) {
    seed = *seed_;
  } else {
    ENCORE_ASSIGN_OR_RETURN(seed, SeedFromRandomDevice(options_.random_device_token));
  }
  ENCORE_RETURN_IF_ERROR(internal::RefuseIfCapturing(
      stream,
      "Philox: the first draw sets up the generator's device state, which needs a host sync that a CUDA "
      "graph cannot record; draw once before capturing"));
  void* p = nullptr;
  ENCORE_CUDA_CALL(Malloc, &p, sizeof(internal::PhiloxState));
  const internal::PhiloxState init{seed, 0, 0, 0};
  Status st = internal::WriteAndSync(p, &init, sizeof init, stream);
  if (!st.ok()) {
    cudaError_t err = cuda().Free(p);
    if (err != cudaSuccess) {
      return CudaResult(err, CudaCall::kFree, "after " + std::string(st.message()));
    }
    return st;
  }
  state_ = CudaHandle<internal::PhiloxStateTraits>(static_cast<internal::PhiloxState*>(p));
  seed_ = seed;
  return OkStatus();
}

StatusOr<uint64_t> Philox::Offset(cudaStream_t stream) {
  if (!state_) return uint64_t{0};
  ENCORE_RETURN_IF_ERROR(internal::RefuseIfCapturing(
      stream, "Philox::Offset reads the device offset back to the host, which a CUDA graph cannot record"));
  unsigned long long offset = 0;
  ENCORE_RETURN_IF_ERROR(internal::ReadBack(&offset, &state_.get()->offset, sizeof offset, stream));
  return static_cast<uint64_t>(offset);
}

}  // namespace encore::shims
