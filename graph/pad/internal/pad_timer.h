// SPDX-License-Identifier: Apache-2.0
// PadTimer: the device time of some of a padded method's calls, for the
// measured padding decision (MeasuredPadding, policy/internal/padding_cost.h). A timed call
// records a timing event on its stream before its work and one after; the
// span between them is read later, when another call is timed, with
// cudaEventQuery (never a wait) and cudaEventElapsedTime. A span covers
// what the device did between the two records: a replay's graph, or an
// eager run's kernels and the gaps in which the device waited for the host
// to launch them, so an eager run that the host cannot launch fast enough
// is measured as slow as it is. Internal to graph/; the owner serializes
// every call (the method's mutex).
#ifndef ENCORE_GRAPH_PAD_INTERNAL_PAD_TIMER_H_
#define ENCORE_GRAPH_PAD_INTERNAL_PAD_TIMER_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "encore/core/internal/stream.h"
#include "encore/policy/internal/padding_cost.h"

namespace encore {

class PadTimer {
 public:
  // Spans in flight at most; a call to time finds them all unread: untimed.
  static constexpr size_t kSlots = 8;

  PadTimer() = default;
  PadTimer(const PadTimer&) = delete;
  PadTimer& operator=(const PadTimer&) = delete;

  // Reads the spans that ended into `cost`, then records a start event on
  // `stream` for a call of `rows` (a replay: its bucket's; eager: its
  // batch). False, with nothing recorded, when no slot is free or CUDA
  // fails (the sample is skipped, the error is encore's and cleared).
  bool Start(MeasuredPadding& cost, cudaStream_t stream, bool replay, int64_t rows);
  // The end of the call Start began, its work queued on `stream`; `ok`
  // false (the call failed) drops the sample.
  void Stop(cudaStream_t stream, bool ok);

 private:
  struct Slot {
    Event start;
    Event end;
    bool replay = false;
    int64_t rows = 0;
    bool pending = false;  // both recorded, not read yet
  };
  void Harvest(MeasuredPadding& cost);

  std::array<Slot, kSlots> slots_;
  Slot* open_ = nullptr;  // started, not stopped
};

}  // namespace encore

#endif  // ENCORE_GRAPH_PAD_INTERNAL_PAD_TIMER_H_
