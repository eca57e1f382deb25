// SPDX-License-Identifier: Apache-2.0
#include "graph/exec_cache.h"  // private to graph/

#include <algorithm>
#include <utility>

#include "encore/core/cuda_api.h"
#include "encore/core/cuda_error.h"
#include "graph/address_set.h"  // private to graph/

namespace encore {

size_t ExecCache::Find(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i]->signature.Matches(inputs, outputs)) return i;
  }
  return entries_.size();
}

GraphEntry& ExecCache::Touch(size_t i) {
  // The vector is the LRU order.
  std::rotate(entries_.begin(), entries_.begin() + i, entries_.begin() + i + 1);
  return *entries_.front();
}

bool ExecCache::VariantMatches(const ExecVariant& v, std::span<const TensorRef> inputs,
                               std::span<const TensorRef> outputs) {
  for (const HeadNode& h : v.heads) {
    for (int k = 0; k < h.params.count; ++k) {
      if (h.params.copies[k].src != inputs[h.first + k].data) return false;
    }
    for (int k = 0; k < h.params.publish_count; ++k) {
      if (h.params.publish[k] != outputs[h.first + k].data) return false;
    }
  }
  return true;
}

namespace {

// Sets the caller's addresses in a head's parameters; whether any changed.
bool SetHeadAddresses(HeadNode& h, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  bool changed = false;
  for (int k = 0; k < h.params.count; ++k) {
    const void* addr = inputs[h.first + k].data;
    changed |= h.params.copies[k].src != addr;
    h.params.copies[k].src = addr;
  }
  for (int k = 0; k < h.params.publish_count; ++k) {
    void* addr = outputs[h.first + k].data;
    changed |= h.params.publish[k] != addr;
    h.params.publish[k] = addr;
  }
  return changed;
}

// Writes a head's parameters into `exec`, or with `exec` null into the
// graph's node. On failure the node may hold either address: the head
// forgets its addresses, so the next use writes it again.
cudaError_t WriteHead(HeadNode& h, cudaGraphExec_t exec) {
  void* args[] = {&h.params};
  cudaKernelNodeParams p = h.launch;
  p.kernelParams = args;
  p.extra = nullptr;
  const cudaError_t err = exec != nullptr ? cuda().GraphExecKernelNodeSetParams(exec, h.node, &p)
                                          : cuda().GraphKernelNodeSetParams(h.node, &p);
  if (err != cudaSuccess) {
    for (int k = 0; k < h.params.count; ++k) h.params.copies[k].src = nullptr;
    for (int k = 0; k < h.params.publish_count; ++k) h.params.publish[k] = nullptr;
  }
  return err;
}

}  // namespace

Status ExecCache::Restage(ExecVariant& v, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  for (HeadNode& h : v.heads) {
    if (!SetHeadAddresses(h, inputs, outputs)) continue;
    if (cudaError_t err = WriteHead(h, v.exec.get()); err != cudaSuccess) {
      return CudaStatus(err, CudaCallName(CudaCall::kGraphExecKernelNodeSetParams),
                        "method '" + *method_ + "': staging addresses not updated, nothing launched");
    }
  }
  return OkStatus();
}

StatusOr<GraphExec> ExecCache::InstantiateBound(GraphEntry& g, std::span<const TensorRef> inputs,
                                                std::span<const TensorRef> outputs) {
  // The heads get these addresses in the graph before it is instantiated,
  // not rewritten after: on an H200 a 128-kernel executable with a rewritten
  // node ran 1.2x slower from then on (bench/binding_micro). template_heads
  // keeps saying what the graph's heads hold, for the next instantiation.
  for (HeadNode& h : g.template_heads) {
    if (!SetHeadAddresses(h, inputs, outputs)) continue;
    if (cudaError_t err = WriteHead(h, nullptr); err != cudaSuccess) {
      return CudaStatus(err, CudaCallName(CudaCall::kGraphKernelNodeSetParams));
    }
  }
  return GraphExec::Instantiate(*g.graph);
}

size_t ExecCache::VariantForNewAddresses(GraphEntry& g, std::span<const TensorRef> inputs,
                                         std::span<const TensorRef> outputs, int64_t* new_variants) {
  // Callers that cycle through a few buffers (double buffering, a caching
  // allocator) come back to the same sets, so a set seen twice gets its own
  // executable and later costs no parameter rewrite at all; a set seen once
  // reuses the least recently used executable with one rewrite per head node.
  const bool recurring = g.missed.Recurs(AddressSetKey(inputs, outputs));
  if (recurring && g.variants.size() < MaxExecVariants(g.nodes)) {
    StatusOr<GraphExec> exec = InstantiateBound(g, inputs, outputs);
    if (exec.ok()) {
      g.variants.push_back(ExecVariant{*std::move(exec), g.graph, g.template_heads});
      ++*new_variants;
      return g.variants.size() - 1;
    }
    log_->Warn("variant_failed", {{"method", *method_}, {"error", exec.status().message()}});
  }
  size_t lru = 0;
  for (size_t i = 1; i < g.variants.size(); ++i) {
    if (g.variants[i].last_use < g.variants[lru].last_use) lru = i;
  }
  return lru;
}

StatusOr<BoundExec> ExecCache::Bind(GraphEntry& g, std::span<const TensorRef> inputs,
                                    std::span<const TensorRef> outputs, int64_t* new_variants) {
  if (g.direct) {
    StatusOr<const GraphExec*> direct = g.direct->Bind(inputs, outputs, new_variants);
    if (direct.ok() && *direct != nullptr) return BoundExec{*direct, g.direct->bumps_sequence()};
    // CUDA refused to point a node at these buffers (a memcpy endpoint in
    // pinned-host or managed memory): the staged graph, whose kernels copy
    // them in and out, answers the call, as it does overlapping tensors.
    if (!direct.ok() && g.direct->refused_rewrites() == 1) {
      log_->Warn("direct_rewrite_refused", {{"method", *method_},
                                            {"signature", g.signature.ToString()},
                                            {"error", direct.status().message()},
                                            {"detail", "answered by the staged graph, as are later calls with "
                                                       "these addresses; logged once per graph"}});
    }
  }
  // From the last call's variant: fixed buffers hit at the first look,
  // buffers that rotate at the second.
  size_t vi =
      FindFrom(g.mru, g.variants.size(), [&](size_t i) { return VariantMatches(g.variants[i], inputs, outputs); });
  if (vi == g.variants.size()) {
    vi = VariantForNewAddresses(g, inputs, outputs, new_variants);
    ENCORE_RETURN_IF_ERROR(Restage(g.variants[vi], inputs, outputs));
  }
  g.mru = vi;
  g.variants[vi].last_use = ++g.uses;
  return BoundExec{&g.variants[vi].exec, true};
}

bool ExecCache::AdoptLruExecutable(GraphEntry& entry) {
  if (entries_.empty()) return false;
  GraphEntry& lru = *entries_.back();
  ExecVariant& v = lru.variants[lru.mru];
  if (v.heads.size() != entry.template_heads.size() || !v.exec.Update(*entry.graph).ok()) return false;
  // The executable now runs the new graph, but parameter rewrites must still
  // name nodes of the graph it was instantiated from.
  ExecVariant adopted{std::move(v.exec), v.source, entry.template_heads};
  for (size_t i = 0; i < adopted.heads.size(); ++i) adopted.heads[i].node = v.heads[i].node;
  entry.variants.push_back(std::move(adopted));
  DropBack();
  return true;
}

void ExecCache::Insert(std::unique_ptr<GraphEntry> entry, int max_graphs) {
  while (!entries_.empty() && static_cast<int>(entries_.size()) >= max_graphs) DropBack();
  entries_.insert(entries_.begin(), std::move(entry));
}

void ExecCache::Erase(size_t i) {
  arena_->DropGraph(entries_[i]->id);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
}

}  // namespace encore
