// SPDX-License-Identifier: Apache-2.0
// Work a method's body launched outside its capture: on a stream it never
// joined to the call's, a kernel is not recorded but runs at once, on the
// static buffers the capture gave the body, and the graph holds no node for
// it; its replays would return stale outputs. The capture poisons the
// static outputs before the body runs; an output no node of the graph
// refers to that is no longer poisoned afterwards was written by such work.
// (An output no node refers to and nothing wrote is one the body leaves as
// it is, or reaches through device memory: the graph keeps it.)
#ifndef ENCORE_GRAPH_CAPTURE_INTERNAL_OUTSIDE_WORK_H_
#define ENCORE_GRAPH_CAPTURE_INTERNAL_OUTSIDE_WORK_H_

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "encore/core/status.h"
#include "encore/graph/binding/internal/address_set.h"

namespace encore {

inline constexpr unsigned char kOutputPoison = 0xFF;

// Before the capture begins: fills the static outputs with kOutputPoison
// and waits for `stream`, so no work started later can race the fill.
Status PoisonOutputs(Args static_outputs, cudaStream_t stream);

// After the capture ended: for each output whose `referenced` is false,
// whether its static buffer changed. Waits for the whole device (work on
// an unjoined stream is on no stream encore knows) unless an encore capture
// stays in flight; then it cannot tell, and says so. Empty when none did.
StatusOr<std::string> WorkOutsideCapture(Args static_outputs, const std::vector<bool>& referenced,
                                         cudaStream_t stream);

}  // namespace encore

#endif  // ENCORE_GRAPH_CAPTURE_INTERNAL_OUTSIDE_WORK_H_
