// SPDX-License-Identifier: Apache-2.0
// The kernel chain's graph (bench/micro_kernels.h) with its kernel nodes'
// parameters written back the two ways graph/binding's direct form writes
// them, for stages_micro: whether an executable made or rewritten so costs
// more to launch than one instantiated from the capture as it was.
#ifndef ENCORE_BENCH_EXEC_FORMS_H_
#define ENCORE_BENCH_EXEC_FORMS_H_

#include <cuda_runtime_api.h>

namespace encore::bench {

// Captured, cloned, each kernel node of the clone given its parameters again
// through the driver's cuGraphKernelNodeSetParams, then the clone
// instantiated: how the direct form makes an executable for new addresses.
cudaGraphExec_t CaptureChainSetOnClone(const float* in, float* out, int n, int k, cudaStream_t s);

// Captured and instantiated, then each kernel node of the executable given
// its parameters again through cuGraphExecKernelNodeSetParams: how the
// direct form rewrites an executable in place.
cudaGraphExec_t CaptureChainSetOnExec(const float* in, float* out, int n, int k, cudaStream_t s);

// The same, but given the parameters after one launch on `s` had finished
// (an idle executable that ran before, as encore's least recently used
// variant is when a call rewrites it), or while that launch still runs.
cudaGraphExec_t CaptureChainSetOnExecAfterLaunch(const float* in, float* out, int n, int k, cudaStream_t s,
                                                 bool wait_for_launch);

// The same, then uploaded again (cudaGraphUpload on `s`, waited for).
cudaGraphExec_t CaptureChainSetOnExecUploaded(const float* in, float* out, int n, int k, cudaStream_t s);

// The same through the runtime's cudaGraphExecKernelNodeSetParams, with the
// parameters cudaGraphKernelNodeGetParams reads.
cudaGraphExec_t CaptureChainSetOnExecRuntime(const float* in, float* out, int n, int k, cudaStream_t s);

// Captured and instantiated, then updated whole (cudaGraphExecUpdate) from a
// clone whose nodes were given their parameters again.
cudaGraphExec_t CaptureChainUpdatedFromClone(const float* in, float* out, int n, int k, cudaStream_t s);

}  // namespace encore::bench

#endif  // ENCORE_BENCH_EXEC_FORMS_H_
