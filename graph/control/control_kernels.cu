// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/control_kernels.h"

#include <cuda_runtime.h>

#include "encore/core/internal/cuda_api.h"

namespace encore {
namespace {

// volatile: the flag is usually written by an earlier kernel of the same
// graph (the loop's body); never serve it from a stale cache line.
__device__ unsigned int ReadFlag(const unsigned char* cond) {
  return *reinterpret_cast<const volatile unsigned char*>(cond) != 0 ? 1u : 0u;
}

__global__ void SetIfHandleKernel(cudaGraphConditionalHandle handle, const unsigned char* cond) {
  cudaGraphSetConditional(handle, ReadFlag(cond));
}

__global__ void WhileEntryKernel(cudaGraphConditionalHandle handle, const unsigned char* cond,
                                 unsigned long long* counter) {
  *reinterpret_cast<volatile unsigned long long*>(counter) = 0;
  cudaGraphSetConditional(handle, ReadFlag(cond));
}

__device__ void RecordRunaway(LoopRunaway* record, int loop_id, long long bound, const unsigned long long* sequence) {
  if (atomicCAS(&record->state, 0, 1) != 0) return;  // the first runaway wins
  volatile LoopRunaway* r = record;
  r->loop_id = loop_id;
  r->bound = bound;
  r->seq = sequence != nullptr ? *reinterpret_cast<const volatile unsigned long long*>(sequence) : 0;
  // The fields reach the host before the state that says they are there.
  __threadfence_system();
  r->state = kLoopRunawayWritten;
  __threadfence_system();
}

__global__ void WhileNextKernel(cudaGraphConditionalHandle handle, const unsigned char* cond,
                                unsigned long long* counter, long long bound, LoopRunaway* record, int loop_id,
                                const unsigned long long* sequence) {
  volatile unsigned long long* c = counter;
  const unsigned long long done = *c + 1;
  *c = done;
  unsigned int go = ReadFlag(cond);
  if (go != 0 && done >= static_cast<unsigned long long>(bound)) {
    RecordRunaway(record, loop_id, bound, sequence);
    go = 0;
  }
  cudaGraphSetConditional(handle, go);
}

}  // namespace

cudaError_t LaunchSetIfHandle(unsigned long long handle, const bool* cond, cudaStream_t stream) {
  if (cond == nullptr) return cudaErrorInvalidValue;
  SetIfHandleKernel<<<1, 1, 0, stream>>>(handle, reinterpret_cast<const unsigned char*>(cond));
  return ::encore::cuda().GetLastError();
}

cudaError_t LaunchWhileEntry(unsigned long long handle, const bool* cond, unsigned long long* counter,
                             cudaStream_t stream) {
  if (cond == nullptr || counter == nullptr) return cudaErrorInvalidValue;
  WhileEntryKernel<<<1, 1, 0, stream>>>(handle, reinterpret_cast<const unsigned char*>(cond), counter);
  return ::encore::cuda().GetLastError();
}

cudaError_t LaunchWhileNext(unsigned long long handle, const bool* cond, unsigned long long* counter, long long bound,
                            LoopRunaway* record, int loop_id, const unsigned long long* sequence,
                            cudaStream_t stream) {
  if (cond == nullptr || counter == nullptr || record == nullptr || bound < 1) return cudaErrorInvalidValue;
  WhileNextKernel<<<1, 1, 0, stream>>>(handle, reinterpret_cast<const unsigned char*>(cond), counter, bound, record,
                                       loop_id, sequence);
  return ::encore::cuda().GetLastError();
}

}  // namespace encore
