// SPDX-License-Identifier: Apache-2.0
// When a destroyed method's owners are kept and when they go, with the
// captures encore can see faked in the fault table: no GPU.
#include "encore/core/internal/retired_owners.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <future>
#include <memory>
#include <thread>
#include <utility>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/internal/capture_fence.h"

namespace encore {
namespace {

const cudaStream_t kCallerStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5000});

// The captures in sight and this thread's capture mode, as the fake table
// answers them.
struct FakeCuda {
  static inline bool blocking_stream_captures = false;  // the legacy stream answers "implicit"
  static inline bool per_thread_captures = false;
  static inline bool caller_stream_captures = false;
  static inline cudaError_t query_error = cudaSuccess;  // e.g. no device
  static inline int queries = 0;
  static inline cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;

  static cudaError_t IsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
    ++queries;
    *status = cudaStreamCaptureStatusNone;
    if (query_error != cudaSuccess) return query_error;
    if (s == cudaStreamLegacy) return blocking_stream_captures ? cudaErrorStreamCaptureImplicit : cudaSuccess;
    if ((s == cudaStreamPerThread && per_thread_captures) || (s == kCallerStream && caller_stream_captures)) {
      *status = cudaStreamCaptureStatusActive;
    }
    return cudaSuccess;
  }
  static cudaError_t ExchangeMode(cudaStreamCaptureMode* m) {
    std::swap(mode, *m);
    return cudaSuccess;
  }
  static cudaError_t GetDevice(int* d) {
    *d = 0;
    return cudaSuccess;
  }
  static cudaError_t SetDevice(int) { return cudaSuccess; }
};

// An owner that notes its destruction and the capture mode it ran in.
struct Owner final : Retired {
  static inline int destroyed = 0;
  static inline cudaStreamCaptureMode mode_seen = cudaStreamCaptureModeGlobal;
  Owner() : Retired(0) {}
  ~Owner() override {
    ++destroyed;
    mode_seen = FakeCuda::mode;
  }
};

class RetiredOwnersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeCuda::blocking_stream_captures = FakeCuda::per_thread_captures = FakeCuda::caller_stream_captures = false;
    FakeCuda::query_error = cudaSuccess;
    FakeCuda::queries = 0;
    FakeCuda::mode = cudaStreamCaptureModeGlobal;
    Owner::destroyed = 0;
    Owner::mode_seen = cudaStreamCaptureModeGlobal;
    table_ = RealCudaApi();
    table_.StreamIsCapturing = &FakeCuda::IsCapturing;
    table_.ThreadExchangeStreamCaptureMode = &FakeCuda::ExchangeMode;
    table_.GetDevice = &FakeCuda::GetDevice;
    table_.SetDevice = &FakeCuda::SetDevice;
    previous_ = internal::g_cuda_api.exchange(&table_);
  }
  void TearDown() override {
    FakeCuda::blocking_stream_captures = FakeCuda::per_thread_captures = FakeCuda::caller_stream_captures = false;
    RetiredOwners::Drain();
    EXPECT_EQ(RetiredOwners::Kept(), 0u);
    internal::g_cuda_api.store(previous_);
  }

  CudaApi table_{};
  const CudaApi* previous_ = nullptr;
};

TEST_F(RetiredOwnersTest, WithNoCaptureInSightTheOwnerGoesAtOnceWithTheCaptureModeRelaxed) {
  EXPECT_EQ(RetiredOwners::Retire(std::make_unique<Owner>()), "");
  EXPECT_EQ(Owner::destroyed, 1);
  EXPECT_EQ(Owner::mode_seen, cudaStreamCaptureModeRelaxed);
  EXPECT_EQ(FakeCuda::mode, cudaStreamCaptureModeGlobal);  // the thread's mode again
  EXPECT_EQ(RetiredOwners::Kept(), 0u);
}

TEST_F(RetiredOwnersTest, ABlockingStreamCapturingKeepsTheOwnerUntilACallSeesItEnd) {
  FakeCuda::blocking_stream_captures = true;
  EXPECT_EQ(RetiredOwners::Retire(std::make_unique<Owner>()), "a blocking stream of the device is capturing");
  EXPECT_EQ(RetiredOwners::Retire(std::make_unique<Owner>()), "a blocking stream of the device is capturing");
  EXPECT_EQ(Owner::destroyed, 0);
  EXPECT_EQ(RetiredOwners::Kept(), 2u);
  RetiredOwners::Drain();  // the capture goes on
  EXPECT_EQ(Owner::destroyed, 0);
  EXPECT_EQ(RetiredOwners::Kept(), 2u);
  FakeCuda::blocking_stream_captures = false;
  RetiredOwners::Drain();
  EXPECT_EQ(Owner::destroyed, 2);
  EXPECT_EQ(Owner::mode_seen, cudaStreamCaptureModeRelaxed);
  EXPECT_EQ(RetiredOwners::Kept(), 0u);
}

TEST_F(RetiredOwnersTest, ACallOnACapturingStreamDoesNotDrain) {
  FakeCuda::per_thread_captures = true;
  EXPECT_EQ(RetiredOwners::Retire(std::make_unique<Owner>()), "this thread's per-thread default stream is capturing");
  FakeCuda::per_thread_captures = false;
  FakeCuda::caller_stream_captures = true;
  RetiredOwners::Drain(kCallerStream);  // a Run inside the application's capture
  EXPECT_EQ(Owner::destroyed, 0);
  RetiredOwners::Drain();  // a call that names no stream
  EXPECT_EQ(Owner::destroyed, 1);
}

TEST_F(RetiredOwnersTest, AnEncoreCaptureInFlightKeepsTheOwner) {
  {
    CaptureTicket ticket = CaptureTicket::Take();  // this thread captures
    EXPECT_EQ(RetiredOwners::Retire(std::make_unique<Owner>()), "an encore capture is in flight");
    RetiredOwners::Drain();
    EXPECT_EQ(Owner::destroyed, 0);
  }
  std::promise<void> taken, done;
  std::thread other([&] {
    CaptureTicket ticket = CaptureTicket::Take();  // another thread captures
    taken.set_value();
    done.get_future().wait();
  });
  taken.get_future().wait();
  EXPECT_EQ(RetiredOwners::Retire(std::make_unique<Owner>()), "an encore capture is in flight");
  done.set_value();
  other.join();
  EXPECT_EQ(RetiredOwners::Kept(), 2u);
  RetiredOwners::Drain();
  EXPECT_EQ(Owner::destroyed, 2);
}

TEST_F(RetiredOwnersTest, QueriesThatFailSeeNothing) {
  FakeCuda::query_error = cudaErrorNoDevice;
  EXPECT_EQ(RetiredOwners::Retire(std::make_unique<Owner>()), "");
  EXPECT_EQ(Owner::destroyed, 1);
}

TEST_F(RetiredOwnersTest, DrainWithNothingKeptAsksNothing) {
  RetiredOwners::Drain(kCallerStream);
  EXPECT_EQ(FakeCuda::queries, 0);
}

}  // namespace
}  // namespace encore
