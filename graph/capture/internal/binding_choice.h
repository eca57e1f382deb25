// SPDX-License-Identifier: Apache-2.0
// How one captured piece reaches the caller's buffers (MethodFlags::
// binding): staged, or its direct form, chosen after the reference scan
// (policy/internal/binding_policy.h holds the rule), and, under binding=auto, judged
// again once replays show whether the caller's addresses recur.
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_BINDING_CHOICE_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_BINDING_CHOICE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "encore/graph/binding/internal/direct_form.h"
#include "encore/graph/binding/internal/reference_scan.h"
#include "encore/graph/capture/internal/capture_context.h"
#include "encore/graph/capture/internal/capture_outcome.h"

namespace encore {

struct BindingInput {
  ScanResult scan;
  StagedNodes nodes;   // encore's nodes in the staged graph
  bool padded = false;
  bool body_checks = false;  // the piece's body called Call::Check
  Args static_inputs;  // the buffers the body ran on
  Args static_outputs;
  int64_t recaptures = 0;  // the method's recaptures so far (binding=auto stages a method that keeps recapturing)
};

// Sets piece.binding; when direct is chosen, gives back what building the
// direct form needs (BuildDirect, which the capture does while the staged
// graph's first launch runs).
std::optional<BindingInput> ChoosePieceBinding(const CaptureContext& c, PieceGraph& piece, BindingInput in);
// The direct form (the clone, its sites) and its first executable, after
// the staged one: the capture stands on the staged graph, and a direct form
// that does not build only costs its speed (the piece is staged).
// The piece's staged executable, made and counted unless it exists (a
// direct-first capture made none).
Status InstantiateStaged(PieceGraph& piece, CaptureCounts& counts);
// Returns the microseconds its instantiation took (capture_phases).
double BuildDirect(const CaptureContext& c, PieceGraph& piece, BindingInput in, int64_t index, CaptureCounts& counts);
// The piece is staged from now on, with `why`; logged.
void UseStagedBinding(const CaptureContext& c, PieceGraph& piece, const std::string& why, int64_t index);
// The staged binding of a piece captured in the background that direct
// binding would have bound: the probe that proves a direct form launches
// the graph, and a background capture launches nothing.
BindingChoice BackgroundBinding(Binding asked);
// binding=auto's second look at a direct piece once its replays show
// whether the caller's addresses recur.
void RejudgeAutoBinding(const CaptureContext& c, PieceGraph& piece, int64_t index, CaptureCounts& counts);

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_BINDING_CHOICE_H_
