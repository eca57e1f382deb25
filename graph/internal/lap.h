// SPDX-License-Identifier: Apache-2.0
// Lap: the stopwatch the capture's phase timings (capture_phases) are read
// with, in the capture pipeline, the probe and the direct form alike.
#ifndef ENCORE_GRAPH_INTERNAL_LAP_H_
#define ENCORE_GRAPH_INTERNAL_LAP_H_

#include <chrono>

namespace encore {

// Microseconds since *t, which then moves to now.
inline double Lap(std::chrono::steady_clock::time_point* t) {
  const auto now = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(now - *t).count();
  *t = now;
  return us;
}

}  // namespace encore

#endif  // ENCORE_GRAPH_INTERNAL_LAP_H_
