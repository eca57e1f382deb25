// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/conditional_capture.h"

#include <string>
#include <vector>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"

namespace encore {
namespace {

struct CaptureState {
  cudaGraph_t graph = nullptr;
  std::vector<cudaGraphNode_t> deps;  // copied: CUDA's array lasts only until the next call on the stream
};

StatusOr<CaptureState> ActiveCapture(cudaStream_t stream, const char* what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  ENCORE_CUDA_CALL(StreamGetCaptureGraph, stream, &status, &graph, &deps, &n);
  if (status != cudaStreamCaptureStatusActive) {
    return FailedPreconditionError(std::string(what) +
                                   (status == cudaStreamCaptureStatusNone
                                        ? ": the stream is not being captured (outside a capture, run the body "
                                          "eagerly: RunEagerIf / RunEagerWhile)"
                                        : ": the stream's capture was invalidated by an earlier call"));
  }
  return CaptureState{graph, std::vector<cudaGraphNode_t>(deps, deps + n)};
}

// Ends a capture for real, past the fault seam (which may be failing the
// very call that would end it), so the stream is usable again. The graph
// captured into belongs to a conditional node: never destroyed here.
void EndCaptureForReal(cudaStream_t stream) {
  const CudaApi& real = RealCudaApi();
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (real.StreamIsCapturing(stream, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
    cudaGraph_t g = nullptr;
    (void)real.StreamEndCapture(stream, &g);
  }
  (void)cuda().GetLastError();  // through the seam: also drops an injected error left for it
}

// The capture of one body stream into its body graph; ended on every path.
class BodyCapture {
 public:
  BodyCapture(cudaStream_t stream, bool* broken) : stream_(stream), broken_(broken) {}
  BodyCapture(const BodyCapture&) = delete;
  BodyCapture& operator=(const BodyCapture&) = delete;
  ~BodyCapture() {
    if (!open_) return;
    cudaGraph_t g = nullptr;
    if (cuda().StreamEndCapture(stream_, &g) != cudaSuccess) *broken_ = true;
    EndCaptureForReal(stream_);
  }
  Status End() {
    open_ = false;
    cudaGraph_t g = nullptr;
    cudaError_t err = cuda().StreamEndCapture(stream_, &g);
    if (err == cudaSuccess) return OkStatus();
    *broken_ = true;
    EndCaptureForReal(stream_);
    return CudaResult(err, CudaCall::kStreamEndCapture, "ending the capture of an If/While body");
  }

 private:
  cudaStream_t stream_;
  bool* broken_;
  bool open_ = true;
};

Status LaunchStatus(cudaError_t err, const char* what, const char* kernel) {
  if (err == cudaSuccess) return OkStatus();
  return CudaStatus(err, std::string(what) + ": launch of the " + kernel + " kernel");
}

}  // namespace

class ConditionalCapture::DepthScope {
 public:
  explicit DepthScope(ConditionalCapture* c) : c_(c) {
    if (++c_->depth_ > c_->max_depth_) c_->max_depth_ = c_->depth_;
  }
  ~DepthScope() { --c_->depth_; }
  DepthScope(const DepthScope&) = delete;
  DepthScope& operator=(const DepthScope&) = delete;

 private:
  ConditionalCapture* c_;
};

Status ConditionalCapture::AddIf(cudaStream_t stream, const bool* device_cond, const BodyFn& then_fn) {
  if (device_cond == nullptr) return InvalidArgumentError("If: the condition pointer is null");
  if (!then_fn) return InvalidArgumentError("If: the body function is empty");
  ENCORE_RETURN_IF_ERROR(Add({"If", false, nullptr, 0, 0}, stream, device_cond, then_fn));
  ++conditionals_;
  return OkStatus();
}

Status ConditionalCapture::AddWhile(cudaStream_t stream, const bool* device_cond, const BodyFn& body_fn,
                                    int64_t max_iterations, int loop_id) {
  if (max_iterations <= 0) {
    return InvalidArgumentError("While: max_iterations is " + std::to_string(max_iterations) +
                                "; it must be at least 1");
  }
  if (device_cond == nullptr) return InvalidArgumentError("While: the condition pointer is null");
  if (!body_fn) return InvalidArgumentError("While: the body function is empty");
  if (res_.counters == nullptr || res_.runaway == nullptr) {
    return FailedPreconditionError("While: no loop counters or loop record were prepared before the capture");
  }
  ENCORE_ASSIGN_OR_RETURN(unsigned long long* counter, res_.counters->Claim());
  ENCORE_RETURN_IF_ERROR(Add({"While", true, counter, max_iterations, loop_id}, stream, device_cond, body_fn));
  ++conditionals_;
  ++loops_;
  return OkStatus();
}

Status ConditionalCapture::Add(const Site& site, cudaStream_t stream, const bool* cond, const BodyFn& body) {
  if (res_.streams == nullptr) {
    return FailedPreconditionError(std::string(site.what) + ": no body streams were prepared before the capture");
  }
  ENCORE_ASSIGN_OR_RETURN(cudaStream_t body_stream, res_.streams->At(depth_));
  ENCORE_ASSIGN_OR_RETURN(CaptureState before, ActiveCapture(stream, site.what));
  // The handle lives in the graph that holds its node: the body graph being
  // captured into when this conditional is nested in another.
  unsigned long long handle = 0;
  ENCORE_CUDA_CALL(GraphConditionalHandleCreate, &handle, before.graph, 0, 0);
  ENCORE_RETURN_IF_ERROR(site.loop ? LaunchStatus(LaunchWhileEntry(handle, cond, site.counter, stream), site.what,
                                                  "loop entry")
                                   : LaunchStatus(LaunchSetIfHandle(handle, cond, stream), site.what, "set-if"));
  ENCORE_ASSIGN_OR_RETURN(CaptureState after, ActiveCapture(stream, site.what));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = site.loop ? cudaGraphCondTypeWhile : cudaGraphCondTypeIf;
  params.conditional.size = 1;
  cudaGraphNode_t node = nullptr;
  ENCORE_CUDA_CALL(GraphAddNode, &node, after.graph, after.deps.data(), after.deps.size(), &params);
  cudaGraph_t body_graph = params.conditional.phGraph_out[0];
  bodies_.Add(node, body_graph);
  ENCORE_CUDA_CALL(StreamUpdateCaptureDependencies, stream, &node, 1, cudaStreamSetCaptureDependencies);
  ENCORE_RETURN_IF_ERROR(CaptureBody(site, handle, cond, body_stream, body_graph, body));
  // Work a body issued on this stream instead of the body stream would have
  // landed after the node, outside the body.
  ENCORE_ASSIGN_OR_RETURN(CaptureState end, ActiveCapture(stream, site.what));
  if (end.deps.size() != 1 || end.deps[0] != node) {
    return FailedPreconditionError(std::string(site.what) +
                                   ": work was issued on the enclosing stream while the body was captured; a body "
                                   "must issue its work on the body stream it is given");
  }
  return OkStatus();
}

Status ConditionalCapture::CaptureBody(const Site& site, unsigned long long handle, const bool* cond,
                                       cudaStream_t body_stream, cudaGraph_t body_graph, const BodyFn& body) {
  ENCORE_CUDA_CALL(StreamBeginCaptureToGraph, body_stream, body_graph, nullptr, 0, cudaStreamCaptureModeThreadLocal);
  BodyCapture capture(body_stream, &body_capture_broken_);
  {
    DepthScope nested(this);
    ENCORE_RETURN_IF_ERROR(body(body_stream));
  }
  if (site.loop) {
    ENCORE_RETURN_IF_ERROR(LaunchStatus(LaunchWhileNext(handle, cond, site.counter, site.bound, res_.runaway,
                                                        site.loop_id, res_.sequence, body_stream),
                                        site.what, "loop step"));
  }
  return capture.End();
}

}  // namespace encore
