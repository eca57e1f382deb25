// SPDX-License-Identifier: Apache-2.0
// Probe: proves a piece's direct form at the capture's first launch. The
// staged graph's launch gives the call its result. Then the state that
// launch changed (the constants' written blocks, the shims' generator
// offsets, the check sequence) is put back, encore's static buffers and the
// probe's outputs are filled with 0xFF (NaN in every float type), and the
// direct form runs on snapshots of the inputs. A reference the scan could
// not see (a pointer kept in device memory, or split into halves) reads
// poison or writes where the probe does not look, so its outputs or
// constants differ (or a device check in it fails: the probe's evidence,
// no call's failure), and the piece is staged. The state is then left as
// the staged launch left it: the call's writes are applied once. A launch
// that wrote a constant outside what was saved is not run again: staged.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_PROBE_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_PROBE_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>

#include "encore/graph/capture/internal/capture_context.h"
#include "encore/graph/verify/internal/verified_launch.h"

namespace encore {

// Where Finish's time went, microseconds (capture_phases): waiting for the
// staged launch and rewinding what it wrote, poisoning and binding, the
// direct form's run and comparison, and restoring the staged result.
struct ProbeTimes {
  double wait = 0, bind = 0, run = 0, keep = 0;
};

class Probe {
 public:
  // `outputs_in`: the piece reads the outputs (data an earlier stage left),
  // so the probe's copies of them keep that data instead of poison.
  // `bumps_sequence`: the direct form keeps the head that bumps the device
  // check sequence (the body checks), which its run must not count twice.
  Probe(CaptureContext& context, PieceGraph& piece, const GraphEntry& entry, bool outputs_in, bool bumps_sequence)
      : c_(context), piece_(piece), entry_(entry), outputs_in_(outputs_in), bumps_sequence_(bumps_sequence) {}

  // Before the piece's first (staged) launch: the snapshots, or nothing
  // (the piece staged, with the reason) when it cannot be probed.
  void Begin(Args inputs, Args outputs, cudaStream_t stream, int64_t index);
  // Right after that launch: the first check of the rewind, queued.
  void QueueFirstCheck(cudaStream_t stream, int64_t index);
  // Right after that launch, once the direct form exists: binds it to the
  // snapshots while the launch runs (a rewrite of an executable changes
  // only its later launches) and queues the rewritten executable's upload,
  // so the host pays for it while it waits for that launch, not after.
  // Finish binds it otherwise.
  void Bind(cudaStream_t stream);
  // After that launch (and the direct form built). With several ranks,
  // every rank casts the probe's vote here, probing or not.
  void Finish(Args outputs, cudaStream_t stream, int64_t index);
  bool probing() const { return probe_.has_value(); }
  const ProbeTimes& times() const { return times_; }

 private:
  // All the probe's launch needs (state rewound, no check failure pending,
  // buffers poisoned, the direct form bound to the snapshots); why not.
  std::string Prepare(cudaStream_t stream, const GraphExec** exec);
  // The launch and comparison; why the piece stays staged, or empty.
  std::string Run(const GraphExec& exec, Args outputs, cudaStream_t stream);
  // After that run: why a write to encore's static buffers stages the
  // piece, or empty; a failure to check goes to `error`.
  std::string StaticsWritten(cudaStream_t stream, Status* error);

  CaptureContext& c_;
  PieceGraph& piece_;
  const GraphEntry& entry_;
  const bool outputs_in_;
  const bool bumps_sequence_;
  std::optional<VerifiedLaunch> probe_;
  std::optional<StatusOr<const GraphExec*>> bound_;  // Bind's result
  ProbeTimes times_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_PROBE_H_
