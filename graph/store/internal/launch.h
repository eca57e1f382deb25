// SPDX-License-Identifier: Apache-2.0
// The one way a method instance launches a graph (captures and replays
// alike), and the padded rows every padded launch reads.
#ifndef ENCORE_GRAPH_STORE_INTERNAL_LAUNCH_H_
#define ENCORE_GRAPH_STORE_INTERNAL_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "encore/core/internal/args.h"
#include "encore/core/status.h"
#include "encore/graph/checks/internal/device_checks.h"
#include "encore/graph/internal/graph.h"
#include "encore/graph/pad/internal/padding.h"
#include "encore/graph/store/internal/graph_entry.h"
#include "encore/graph/store/internal/last_launch.h"

namespace encore {

// What a launch updates besides the stream: the last launch, the
// device-check launch ring, the padded rows ring.
struct Launcher {
  LastLaunch& last;
  DeviceChecks& checks;
  Padding& pad;
  const std::string& method;
};

// `stream` joined to the last launch, then the launch. `bumps_sequence`:
// the graph bumps the device-check sequence, so the launch ring records it;
// `records`: its last node records the completion (PieceGraph::records).
Status LaunchGraph(const Launcher& l, const GraphExec& exec, cudaStream_t stream, int64_t index, bool bumps_sequence,
                   bool records);
// The capture's first launch of a piece bound directly before its staged
// graph has an executable: the staged heads, the direct form's first
// executable (the body's nodes on the static buffers), the staged tails.
// `body_launched`: the body's executable was launched, so its work may
// have run (no eager retry). Never for a padded graph.
Status LaunchAroundDirect(const Launcher& l, PieceGraph& piece, cudaStream_t stream, int64_t index,
                          bool* body_launched);
// Hands the next padded launch its batch through the rows ring.
Status SetPadRows(const Launcher& l, int64_t batch);
// Where a launch of `g` leaves its results: the caller's outputs, or with
// copy_outputs=false the graph's static outputs (which the caller reads).
inline Args GraphOutputs(const MethodFlags& flags, const GraphEntry& g, Args outputs) {
  return flags.copy_outputs ? outputs : Args(g.static_outputs);
}

}  // namespace encore

#endif  // ENCORE_GRAPH_STORE_INTERNAL_LAUNCH_H_
