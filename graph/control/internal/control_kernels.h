// SPDX-License-Identifier: Apache-2.0
// The one-thread kernels that drive conditional nodes (ConditionalCapture):
// each reads a device flag and sets a conditional handle from it with the
// device-side cudaGraphSetConditional, so no host read happens in a graph.
// A WHILE loop's iterations are counted on the device; one that reaches its
// bound with the flag still true stops there and writes a LoopRunaway to
// mapped pinned host memory (LoopRecord owns one), as a failed Call::Check
// writes its CheckRecord (graph/checks/internal/device_check_kernel.h).
#ifndef ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_KERNELS_H_
#define ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_KERNELS_H_

#include <cuda_runtime_api.h>

namespace encore {

// Written by the device, read by the host with no copy. `state` is 0 until a
// loop runs away; the first one claims the record (1), writes the other
// fields, fences and sets 2, so the fields are valid once the host sees 2.
struct LoopRunaway {
  int state;
  int loop_id;
  long long bound;
  // *sequence at the runaway when the loop was given one (the device counter
  // of a method's replays, DeviceChecks::sequence()), else 0.
  unsigned long long seq;
};

inline constexpr int kLoopRunawayWritten = 2;

// handle = (*cond != 0). cudaErrorInvalidValue without launching if cond is
// null; else the launch's error (cudaGetLastError through the fault seam).
cudaError_t LaunchSetIfHandle(unsigned long long handle, const bool* cond, cudaStream_t stream);

// Before a WHILE node: *counter = 0; handle = (*cond != 0).
cudaError_t LaunchWhileEntry(unsigned long long handle, const bool* cond, unsigned long long* counter,
                             cudaStream_t stream);

// Last node of a WHILE body: ++*counter; handle = (*cond != 0) unless the
// counter reached `bound` with *cond still true, in which case the handle is
// set to 0 (the loop stops) and the runaway is recorded in *record (loop_id,
// bound, *sequence when sequence is not null) unless one is recorded already.
// cudaErrorInvalidValue without launching if cond, counter or record is
// null or bound < 1.
cudaError_t LaunchWhileNext(unsigned long long handle, const bool* cond, unsigned long long* counter, long long bound,
                            LoopRunaway* record, int loop_id, const unsigned long long* sequence,
                            cudaStream_t stream);

}  // namespace encore

#endif  // ENCORE_GRAPH_CONTROL_INTERNAL_CONTROL_KERNELS_H_
