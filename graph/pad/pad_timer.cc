// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/pad/internal/pad_timer.h"

#include "encore/core/internal/cuda_api.h"

namespace encore {

void PadTimer::Harvest(MeasuredPadding& cost) {
  for (Slot& s : slots_) {
    if (!s.pending) continue;
    // Not ready: left for a later call. cudaErrorNotReady is an answer,
    // not an error.
    const cudaError_t q = cuda().EventQuery(s.end.get());
    if (q == cudaErrorNotReady) continue;
    s.pending = false;
    float ms = 0;
    const cudaError_t e = q == cudaSuccess ? cuda().EventElapsedTime(&ms, s.start.get(), s.end.get()) : q;
    if (e != cudaSuccess) {
      ClearCudaError();  // encore's own query; the sample is dropped
      continue;
    }
    const double us = 1000.0 * static_cast<double>(ms);
    if (s.replay) {
      cost.AddReplay(s.rows, us);
    } else {
      cost.AddEager(s.rows, us);
    }
  }
}

bool PadTimer::Start(MeasuredPadding& cost, cudaStream_t stream, bool replay, int64_t rows) {
  Harvest(cost);
  Slot* free = nullptr;
  for (Slot& s : slots_) {
    if (!s.pending) {
      free = &s;
      break;
    }
  }
  if (free == nullptr) return false;
  if (!free->start) {
    // Timing events (the default flags): made once per slot.
    StatusOr<Event> start = Event::Create(cudaEventDefault);
    StatusOr<Event> end = start.ok() ? Event::Create(cudaEventDefault) : StatusOr<Event>(start.status());
    if (!end.ok()) return false;
    free->start = *std::move(start);
    free->end = *std::move(end);
  }
  if (cuda().EventRecord(free->start.get(), stream) != cudaSuccess) {
    ClearCudaError();
    return false;
  }
  free->replay = replay;
  free->rows = rows;
  open_ = free;
  return true;
}

void PadTimer::Stop(cudaStream_t stream, bool ok) {
  Slot* s = open_;
  open_ = nullptr;
  if (s == nullptr || !ok) return;
  if (cuda().EventRecord(s->end.get(), stream) != cudaSuccess) {
    ClearCudaError();
    return;
  }
  s->pending = true;
}

}  // namespace encore
