// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/rate_limiter.h"

#include <gtest/gtest.h>

namespace encore {
namespace {

using std::chrono::milliseconds;

TEST(RateLimiterTest, LogsTheFirstThenOneLinePerIntervalWithTheCount) {
  RateLimiter limit(std::chrono::seconds(1));
  RateLimiter::Clock::time_point t{};  // the injected clock
  auto d = limit.Admit(t);
  EXPECT_TRUE(d.log);
  EXPECT_EQ(d.suppressed, 0);
  // 10,000 refusals within the next second: none logged, all counted.
  int logged = 0;
  for (int i = 1; i <= 10000; ++i) logged += limit.Admit(t + std::chrono::microseconds(i * 99)).log;
  EXPECT_EQ(logged, 0);
  EXPECT_EQ(limit.pending(), 10000);
  // The first event a second after the last line is logged with the summary.
  d = limit.Admit(t + milliseconds(1000));
  EXPECT_TRUE(d.log);
  EXPECT_EQ(d.suppressed, 10000);
  EXPECT_EQ(limit.pending(), 0);
  EXPECT_FALSE(limit.Admit(t + milliseconds(1500)).log);
  EXPECT_FALSE(limit.Admit(t + milliseconds(1999)).log);
  d = limit.Admit(t + milliseconds(2000));
  EXPECT_TRUE(d.log);
  EXPECT_EQ(d.suppressed, 2);
}

TEST(RateLimiterTest, SparseEventsAreAllLogged) {
  RateLimiter limit(milliseconds(100));
  RateLimiter::Clock::time_point t{};
  for (int i = 0; i < 5; ++i) {
    auto d = limit.Admit(t + milliseconds(100 * i));
    EXPECT_TRUE(d.log) << i;
    EXPECT_EQ(d.suppressed, 0) << i;
  }
}

TEST(RateLimiterTest, TakePendingGivesTheRestForAFinalSummary) {
  RateLimiter limit;
  RateLimiter::Clock::time_point t{};
  (void)limit.Admit(t);
  (void)limit.Admit(t);
  (void)limit.Admit(t);
  EXPECT_EQ(limit.TakePending(), 2);
  EXPECT_EQ(limit.TakePending(), 0);
}

}  // namespace
}  // namespace encore
