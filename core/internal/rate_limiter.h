// SPDX-License-Identifier: Apache-2.0
// RateLimiter: logs the first of a run of events, then at most one line per
// interval, which carries how many events were not logged since the line
// before. A server refusing 10,000 calls a second logs one line a second, and
// the count. Pure logic: the caller passes the time, so tests inject a clock.
// Not thread-safe (MethodInstance calls it under its mutex).
#ifndef ENCORE_CORE_INTERNAL_RATE_LIMITER_H_
#define ENCORE_CORE_INTERNAL_RATE_LIMITER_H_

#include <chrono>
#include <cstdint>

namespace encore {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RateLimiter(Clock::duration interval = std::chrono::seconds(1)) : interval_(interval) {}

  struct Decision {
    bool log = false;
    // With log: the events not logged since the last line (0 for the first).
    int64_t suppressed = 0;
  };

  Decision Admit(Clock::time_point now) {
    if (logged_ && now - last_ < interval_) {
      ++pending_;
      return {false, 0};
    }
    Decision d{true, pending_};
    logged_ = true;
    last_ = now;
    pending_ = 0;
    return d;
  }

  // Events not logged since the last line; TakePending also resets the
  // count, for a final summary line.
  int64_t pending() const { return pending_; }
  int64_t TakePending() {
    const int64_t n = pending_;
    pending_ = 0;
    return n;
  }

 private:
  Clock::duration interval_;
  bool logged_ = false;
  Clock::time_point last_{};
  int64_t pending_ = 0;
};

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_RATE_LIMITER_H_
