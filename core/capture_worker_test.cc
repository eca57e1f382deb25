// SPDX-License-Identifier: Apache-2.0
// The background captures' worker thread (core/internal/capture_worker.h):
// order, cancelling an owner's tasks, waiting for one owner or for all, and
// going away with tasks queued. No GPU.
#include "encore/core/internal/capture_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace encore {
namespace {

TEST(CaptureWorkerTest, RunsTasksInOrderOnItsOwnThread) {
  CaptureWorker w;
  std::vector<int> order;
  std::mutex mu;
  const int owner = 0;
  std::atomic<bool> on_worker{true};
  for (int i = 0; i < 20; ++i) {
    w.Submit(&owner, [&, i] {
      on_worker = on_worker && w.OnWorkerThread();
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
  }
  w.WaitAll();
  EXPECT_EQ(w.pending(), 0u);
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(on_worker);
  EXPECT_FALSE(w.OnWorkerThread());
}

// One owner's queued tasks are dropped; the running one runs to its end,
// and WaitIdle returns once it has; another owner's tasks still run.
TEST(CaptureWorkerTest, CancelDropsOnlyTheOwnersQueuedTasks) {
  CaptureWorker w;
  const int a = 0, b = 0;
  std::promise<void> started, release;
  std::shared_future<void> go = release.get_future().share();
  std::atomic<int> ran_a{0}, ran_b{0};
  w.Submit(&a, [&] {
    started.set_value();
    go.wait();
    ++ran_a;
  });
  started.get_future().wait();
  for (int i = 0; i < 3; ++i) w.Submit(&a, [&] { ++ran_a; });
  w.Submit(&b, [&] { ++ran_b; });
  EXPECT_EQ(w.pending(), 5u);
  EXPECT_EQ(w.Cancel(&a), 3u);
  std::thread waiter([&] { w.WaitIdle(&a); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ran_a.load(), 0);
  release.set_value();
  waiter.join();
  EXPECT_EQ(ran_a.load(), 1);
  w.WaitAll();
  EXPECT_EQ(ran_a.load(), 1);
  EXPECT_EQ(ran_b.load(), 1);
}

TEST(CaptureWorkerTest, WaitIdleForAnOwnerWithNothingReturnsAtOnce) {
  CaptureWorker w;
  const int a = 0;
  w.WaitIdle(&a);
  w.WaitAll();
  EXPECT_EQ(w.pending(), 0u);
}

// Going away with tasks queued: the running task ends, the rest never run.
TEST(CaptureWorkerTest, DestroyedWithTasksQueuedRunsNoMore) {
  std::atomic<int> ran{0};
  std::promise<void> started;
  {
    CaptureWorker w;
    const int a = 0;
    w.Submit(&a, [&] {
      started.set_value();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++ran;
    });
    started.get_future().wait();
    for (int i = 0; i < 5; ++i) w.Submit(&a, [&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 1);
}

TEST(CaptureWorkerTest, AThrowingTaskDoesNotStopTheWorker) {
  CaptureWorker w;
  const int a = 0;
  std::atomic<bool> after{false};
  w.Submit(&a, [] { throw 1; });
  w.Submit(&a, [&] { after = true; });
  w.WaitAll();
  EXPECT_TRUE(after);
}

}  // namespace
}  // namespace encore
