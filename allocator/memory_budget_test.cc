// SPDX-License-Identifier: Apache-2.0
#include "encore/allocator/internal/memory_budget.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace encore {
namespace {

TEST(MemoryBudgetTest, ReservesWithinTheLimitOnly) {
  MemoryBudget b(100);
  EXPECT_TRUE(b.TryReserve(60));
  EXPECT_FALSE(b.TryReserve(41));
  EXPECT_EQ(b.used(), 60u);
  EXPECT_TRUE(b.TryReserve(40));
  EXPECT_FALSE(b.TryReserve(1));
  b.Adjust(-30);
  EXPECT_EQ(b.used(), 70u);
  EXPECT_TRUE(b.TryReserve(30));
  EXPECT_FALSE(b.TryReserve(SIZE_MAX));
}

TEST(MemoryBudgetTest, NoLimitCountsEverything) {
  MemoryBudget b(0);
  EXPECT_TRUE(b.TryReserve(size_t{1} << 50));
  b.Adjust(5);
  EXPECT_EQ(b.used(), (size_t{1} << 50) + 5);
}

TEST(MemoryBudgetTest, ConcurrentReservationsNeverPassTheLimit) {
  MemoryBudget b(1000);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) granted += b.TryReserve(3) ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), 333);
  EXPECT_EQ(b.used(), 999u);
}

}  // namespace
}  // namespace encore
