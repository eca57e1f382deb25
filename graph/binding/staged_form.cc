// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/binding/internal/staged_form.h"

#include <algorithm>

#include "encore/core/internal/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "encore/graph/internal/stream_capture.h"

namespace encore {
namespace {

constexpr size_t kChunk = StagingParams::kMaxCopies;

size_t Chunks(size_t n) { return (n + kChunk - 1) / kChunk; }

// Bytes between rows, and bytes of one row, of a tensor whose dim 0 is
// outermost (pad_policy's CheckRowsArePrefix).
RowGeometry GeometryOf(const TensorRef& t) {
  TensorRef one = t;
  one.shape[0] = 1;
  const Strides st = t.effective_strides();
  return RowGeometry{static_cast<uint64_t>(st[0]) * DTypeSize(t.dtype), one.span_bytes()};
}

const TensorRef& TensorAt(int tensor, Args inputs, Args outputs) {
  return static_cast<size_t>(tensor) < inputs.size() ? inputs[tensor] : outputs[tensor - inputs.size()];
}

// The tensors head copies read: every input, then (for a piece after an
// eager stage) every output.
std::vector<int> CopyTensors(const StagingPlan& plan) {
  std::vector<int> t;
  for (size_t i = 0; i < plan.inputs.size(); ++i) t.push_back(static_cast<int>(i));
  if (plan.outputs_in) {
    for (size_t i = 0; i < plan.outputs.size(); ++i) t.push_back(static_cast<int>(plan.inputs.size() + i));
  }
  return t;
}

Status Launch(const StagingParams& p, cudaStream_t stream) {
  uint64_t max_bytes = 0;
  for (int k = 0; k < p.count; ++k) max_bytes = std::max<uint64_t>(max_bytes, p.copies[k].bytes);
  return LaunchResult(LaunchStaging(p, max_bytes, stream), "staging kernel launch");
}

// Launches `p` as the next node of the capture and returns that node.
StatusOr<cudaGraphNode_t> LaunchNode(const StagingParams& p, StreamCapture& cap, cudaStream_t stream) {
  ENCORE_RETURN_IF_ERROR(Launch(p, stream));
  return cap.LastNode();
}

}  // namespace

Status StagedForm::AddHeads(const StagingPlan& plan, StreamCapture& cap, cudaStream_t stream) {
  num_tensors_ = plan.inputs.size() + plan.outputs.size();
  const std::vector<int> copies = CopyTensors(plan);
  const size_t n_pub = plan.copy_out ? plan.outputs.size() : 0;
  const size_t chunks = std::max<size_t>({1, Chunks(copies.size()), Chunks(n_pub)});
  for (size_t c = 0; c < chunks; ++c) {
    HeadNode h;
    StagingParams& p = h.params;
    const size_t first = c * kChunk;
    p.count = static_cast<int>(std::min(kChunk, copies.size() - std::min(copies.size(), first)));
    p.publish_count = static_cast<int>(std::min(kChunk, n_pub - std::min(n_pub, first)));
    p.table = plan.out_table;
    p.table_base = static_cast<int>(first);
    p.sequence = c == 0 ? plan.sequence : nullptr;
    for (int k = 0; k < p.count; ++k) {
      const int t = copies[first + k];
      h.copy_tensor[k] = t;
      const TensorRef& dst = TensorAt(t, plan.static_inputs, plan.static_outputs);
      p.copies[k] = StagingCopy{TensorAt(t, plan.inputs, plan.outputs).data, dst.data, dst.span_bytes()};
      if (plan.pad.rows) p.pad.in_rows[k] = GeometryOf(TensorAt(t, plan.pad.graph_inputs, plan.pad.graph_outputs));
    }
    for (int k = 0; k < p.publish_count; ++k) {
      h.publish_tensor[k] = static_cast<int>(plan.inputs.size() + first + k);
      p.publish[k] = plan.outputs[first + k].data;
      if (plan.pad.rows) p.pad.out_rows[k] = GeometryOf(plan.pad.graph_outputs[first + k]);
    }
    if (plan.pad.rows) {
      p.pad.rows = plan.pad.rows;
      p.pad.launch_slot = plan.pad.launch_slot;
      p.pad.bytes_table = plan.pad.out_bytes;
    }
    ENCORE_ASSIGN_OR_RETURN(h.node, LaunchNode(p, cap, stream));
    heads_.push_back(h);
  }
  return OkStatus();
}

Status StagedForm::AddTails(const StagingPlan& plan, StreamCapture& cap, cudaStream_t stream,
                            std::vector<cudaGraphNode_t>* nodes) {
  const size_t n_out = plan.copy_out ? plan.outputs.size() : 0;
  const size_t chunks = std::max<size_t>(Chunks(n_out), plan.pad.rows ? 1 : 0);
  for (size_t c = 0; c < chunks; ++c) {
    const size_t first = c * kChunk;
    StagingParams p{};
    p.count = static_cast<int>(std::min(kChunk, n_out - std::min(n_out, first)));
    p.table = plan.out_table;
    p.table_base = static_cast<int>(first);
    p.is_tail = 1;
    if (plan.pad.rows) {
      p.pad.rows = plan.pad.rows;
      p.pad.bytes_table = plan.pad.out_bytes;
      p.pad.launch_slot = plan.pad.launch_slot;
      p.pad.advance = c + 1 == chunks;
    }
    for (int k = 0; k < p.count; ++k) {
      const TensorRef& st = plan.static_outputs[first + k];
      p.copies[k] = StagingCopy{st.data, nullptr, st.span_bytes()};
    }
    ENCORE_ASSIGN_OR_RETURN(cudaGraphNode_t node, LaunchNode(p, cap, stream));
    nodes->push_back(node);
    tails_.push_back(p);
  }
  return OkStatus();
}

Status StagedForm::ReadLaunches() {
  for (HeadNode& h : heads_) {
    cudaKernelNodeParams p{};
    ENCORE_CUDA_CALL(GraphKernelNodeGetParams, h.node, &p);
    h.launch = p;
    h.launch.kernelParams = nullptr;
    h.launch.extra = nullptr;
  }
  return OkStatus();
}

StatusOr<bool> StagedForm::AddRoundTrips(const std::vector<int>& tensors, const StagingPlan& plan) {
  size_t room = 0;
  for (const HeadNode& h : heads_) room += kChunk - static_cast<size_t>(h.params.count);
  if (room < tensors.size()) return false;
  size_t next = 0;
  for (HeadNode& h : heads_) {
    bool changed = false;
    for (StagingParams& p = h.params; next < tensors.size() && p.count < static_cast<int>(kChunk); ++next) {
      const int t = tensors[next];
      const TensorRef& dst = TensorAt(t, plan.static_inputs, plan.static_outputs);
      h.copy_tensor[p.count] = t;
      p.copies[p.count] = StagingCopy{TensorAt(t, plan.inputs, plan.outputs).data, dst.data, dst.span_bytes()};
      if (plan.pad.rows) p.pad.in_rows[p.count] = GeometryOf(TensorAt(t, plan.pad.graph_inputs, plan.pad.graph_outputs));
      ++p.count;
      changed = true;
    }
    if (!changed) continue;
    h.launch.gridDim.y = static_cast<unsigned>(h.params.count);
    StagingParams p = h.params;
    void* args[] = {&p};
    cudaKernelNodeParams k = h.launch;
    k.kernelParams = args;
    ENCORE_CUDA_CALL(GraphKernelNodeSetParams, h.node, &k);
  }
  return true;
}

Status StagedForm::InstantiateFirst() {
  if (!variants_.empty()) return OkStatus();
  // The graph's heads hold the capture call's addresses unless a variant
  // was made since, and none was.
  ENCORE_ASSIGN_OR_RETURN(GraphExec exec, GraphExec::Instantiate(*graph_));
  variants_.Add(std::move(exec), CapturedAddresses());
  return OkStatus();
}

Status StagedForm::LaunchHeads(bool body_bumps_sequence, cudaStream_t stream, bool* bumped) const {
  for (const HeadNode& h : heads_) {
    StagingParams p = h.params;
    if (body_bumps_sequence) p.sequence = nullptr;
    ENCORE_RETURN_IF_ERROR(Launch(p, stream));
    *bumped |= p.sequence != nullptr;
  }
  return OkStatus();
}

Status StagedForm::LaunchTails(cudaStream_t stream) const {
  for (const StagingParams& p : tails_) ENCORE_RETURN_IF_ERROR(Launch(p, stream));
  return OkStatus();
}

std::vector<cudaGraphNode_t> StagedForm::head_nodes() const {
  std::vector<cudaGraphNode_t> n;
  for (const HeadNode& h : heads_) n.push_back(h.node);
  return n;
}

Addresses StagedForm::CapturedAddresses() const {
  Addresses a(num_tensors_, nullptr);
  for (const HeadNode& h : heads_) {
    for (int k = 0; k < h.params.count; ++k) a[h.copy_tensor[k]] = h.params.copies[k].src;
    for (int k = 0; k < h.params.publish_count; ++k) a[h.publish_tensor[k]] = h.params.publish[k];
  }
  return a;
}

StagingParams StagedForm::ParamsFor(const HeadNode& h, const Addresses& to) const {
  StagingParams p = h.params;
  for (int k = 0; k < p.count; ++k) p.copies[k].src = to[h.copy_tensor[k]];
  for (int k = 0; k < p.publish_count; ++k) p.publish[k] = const_cast<void*>(to[h.publish_tensor[k]]);
  return p;
}

StatusOr<GraphExec> StagedForm::Instantiate(const Addresses& to) {
  // The heads get these addresses in the graph before it is instantiated,
  // not rewritten after (VariantCache says why).
  for (const HeadNode& h : heads_) {
    StagingParams p = ParamsFor(h, to);
    void* args[] = {&p};
    cudaKernelNodeParams k = h.launch;
    k.kernelParams = args;
    ENCORE_CUDA_CALL(GraphKernelNodeSetParams, h.node, &k);
  }
  return GraphExec::Instantiate(*graph_);
}

Status StagedForm::Rewrite(Cache::Variant& v, const Addresses& to, uint64_t) {
  for (size_t i = 0; i < heads_.size(); ++i) {
    const HeadNode& h = heads_[i];
    bool moved = false;
    for (int k = 0; k < h.params.count; ++k) moved |= v.bound[h.copy_tensor[k]] != to[h.copy_tensor[k]];
    for (int k = 0; k < h.params.publish_count; ++k) moved |= v.bound[h.publish_tensor[k]] != to[h.publish_tensor[k]];
    if (!moved) continue;
    StagingParams p = ParamsFor(h, to);
    void* args[] = {&p};
    cudaKernelNodeParams k = h.launch;
    k.kernelParams = args;
    cudaGraphNode_t node = v.extra.heads.empty() ? h.node : v.extra.heads[i];
    v.rewritten = true;
    ENCORE_RETURN_IF_ERROR(CudaResult(cuda().GraphExecKernelNodeSetParams(v.exec.get(), node, &k),
                                      CudaCall::kGraphExecKernelNodeSetParams,
                                      "staging addresses not updated, nothing launched"));
  }
  return OkStatus();
}

}  // namespace encore
