// SPDX-License-Identifier: Apache-2.0
// The fence between captures and device-wide syncs, with the device sync
// answered by the fault seam (no GPU needed).
#include "encore/core/internal/capture_fence.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

using std::chrono::milliseconds;

class CaptureFenceTest : public ::testing::Test {
 protected:
  // Every device sync "succeeds" at the seam without reaching CUDA.
  void SetUp() override { faults_.FailNth(CudaCall::kDeviceSynchronize, 1, cudaSuccess, 1000); }
  int Syncs() const { return faults_.Count(CudaCall::kDeviceSynchronize); }
  CudaFaultInjector faults_;
};

TEST_F(CaptureFenceTest, SyncsWhenNoCaptureIsInFlight) {
  StatusOr<bool> synced = SynchronizeDeviceBetweenCaptures(milliseconds(0));
  ASSERT_TRUE(synced.ok()) << synced.status();
  EXPECT_TRUE(*synced);
  EXPECT_EQ(Syncs(), 1);
}

TEST_F(CaptureFenceTest, NeverSyncsUnderThisThreadsOwnCapture) {
  CaptureTicket ticket = CaptureTicket::Take();
  StatusOr<bool> synced = SynchronizeDeviceBetweenCaptures(milliseconds(1000));
  ASSERT_TRUE(synced.ok());
  EXPECT_FALSE(*synced);
  EXPECT_EQ(Syncs(), 0);
  ticket.Return();
  synced = SynchronizeDeviceBetweenCaptures(milliseconds(0));
  ASSERT_TRUE(synced.ok());
  EXPECT_TRUE(*synced);
  EXPECT_EQ(Syncs(), 1);
}

TEST_F(CaptureFenceTest, WaitsForAnotherThreadsCaptureThenSyncs) {
  std::atomic<bool> taken{false}, release{false};
  std::thread capturer([&] {
    CaptureTicket ticket = CaptureTicket::Take();
    taken = true;
    while (!release) std::this_thread::sleep_for(milliseconds(1));
  });
  while (!taken) std::this_thread::sleep_for(milliseconds(1));
  // Still capturing after the patience: nothing synced.
  StatusOr<bool> synced = SynchronizeDeviceBetweenCaptures(milliseconds(20));
  ASSERT_TRUE(synced.ok());
  EXPECT_FALSE(*synced);
  EXPECT_EQ(Syncs(), 0);
  // The capture ends while the sync waits: the sync follows it.
  std::thread ender([&] {
    std::this_thread::sleep_for(milliseconds(30));
    release = true;
  });
  synced = SynchronizeDeviceBetweenCaptures(milliseconds(5000));
  ASSERT_TRUE(synced.ok());
  EXPECT_TRUE(*synced);
  EXPECT_EQ(Syncs(), 1);
  capturer.join();
  ender.join();
}

TEST_F(CaptureFenceTest, AMovedTicketIsReturnedOnce) {
  {
    CaptureTicket a = CaptureTicket::Take();
    CaptureTicket b(std::move(a));
    a.Return();  // moved from: returns nothing
    StatusOr<bool> synced = SynchronizeDeviceBetweenCaptures(milliseconds(0));
    ASSERT_TRUE(synced.ok());
    EXPECT_FALSE(*synced);  // b still holds it
  }
  StatusOr<bool> synced = SynchronizeDeviceBetweenCaptures(milliseconds(0));
  ASSERT_TRUE(synced.ok());
  EXPECT_TRUE(*synced);
}

TEST_F(CaptureFenceTest, ANestedTicketDoesNotLockTwice) {
  // A method captured inside another's capture, on one thread: the inner
  // ticket only counts, so another thread's sync waits for the outer one.
  std::atomic<int> stage{0};
  StatusOr<bool> other = false;
  {
    CaptureTicket outer = CaptureTicket::Take();
    std::thread syncer([&] {
      stage = 1;
      other = SynchronizeDeviceBetweenCaptures(milliseconds(5000));
      stage = 2;
    });
    while (stage == 0) std::this_thread::sleep_for(milliseconds(1));
    std::this_thread::sleep_for(milliseconds(20));  // the syncer is waiting for the lock
    {
      CaptureTicket inner = CaptureTicket::Take();  // must not block behind the waiting syncer
    }
    EXPECT_EQ(stage.load(), 1);  // still waiting: the outer ticket is held
    EXPECT_EQ(Syncs(), 0);
    outer.Return();
    syncer.join();
  }
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(*other);
  EXPECT_EQ(Syncs(), 1);
}

TEST_F(CaptureFenceTest, AFailedSyncIsAnError) {
  faults_.ClearFailures();
  faults_.FailNth(CudaCall::kDeviceSynchronize, 1, cudaErrorLaunchFailure);
  StatusOr<bool> synced = SynchronizeDeviceBetweenCaptures(milliseconds(0));
  EXPECT_FALSE(synced.ok());
}

}  // namespace
}  // namespace encore
