// SPDX-License-Identifier: Apache-2.0
// A rebind of the constants (Method::RebindConstants), form by form: the
// words and endpoints that point into a moved constant's old storage,
// found by the reference scan, written again with the new address (the
// offset kept) in the graph and in every executable made from it.
//
// Note [Why a rewrite in place is safe]: CUDA applies a parameter rewrite
// of an executable to the launches made after it; one queued or running
// keeps the parameters it was launched with. So the graphs are rewritten
// at once, whatever is in flight: a launch made before the rebind read the
// old storage, which the application keeps until that work is done (a
// stream-ordered free, as PyTorch's allocator makes), and no launch after
// it does.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "encore/graph/binding/internal/direct_form.h"
#include "encore/graph/binding/internal/site_write.h"
#include "encore/graph/binding/internal/staged_form.h"

namespace encore {
namespace {

// Where the site of range i points after the rebind (its scan's own delta
// kept): `to` indexed by the scan's range.
uintptr_t Moved(const Addresses& to, int range, uint64_t delta) {
  return reinterpret_cast<uintptr_t>(to[range]) + delta;
}

}  // namespace

ScanResult DirectForm::FindConstants(Args old_storage, std::span<const std::string> names, Args staying) const {
  ScanOptions options{rewrites_.kernels, rewrites_.endpoints, names, staying};
  return ReferenceScan::Run(graph_.get(), old_storage, {}, {}, nullptr, &options);
}

template <class Site>
Status DirectForm::WriteBound(Site& site) {
  // The graph's own nodes matter only to executables made later, which
  // write every site of the caller's tensors first.
  ENCORE_RETURN_IF_ERROR(WriteSite(nullptr, site, static_));
  for (size_t i = 0; i < variants_.size(); ++i) {
    Cache::Variant& v = variants_.at(i);
    Addresses to = v.bound;
    for (size_t t = 0; t < to.size(); ++t) to[t] = to[t] != nullptr ? to[t] : static_[t];
    ENCORE_RETURN_IF_ERROR(WriteSite(v.exec.get(), site, to));
  }
  return OkStatus();
}

Status DirectForm::RebindConstants(ScanResult found, const Addresses& to) {
  std::vector<cudaGraphExec_t> execs;
  for (size_t i = 0; i < variants_.size(); ++i) execs.push_back(variants_.at(i).exec.get());
  ScanResult alone;  // sites in nodes that name none of the caller's tensors
  for (KernelSite& c : found.kernels) {
    auto k = std::find_if(rewrites_.kernels.begin(), rewrites_.kernels.end(),
                          [&](const KernelSite& s) { return s.node == c.node; });
    if (k == rewrites_.kernels.end()) {
      alone.kernels.push_back(std::move(c));
      continue;
    }
    // The node also names the caller's tensors: its parameter buffer, which
    // every later rewrite writes whole, takes the constants' new words.
    for (const WordRef& r : c.refs) k->args[r.offset / 8] = Moved(to, r.tensor, r.delta);
    ENCORE_RETURN_IF_ERROR(WriteBound(*k));
  }
  for (EndpointSite& c : found.endpoints) {
    auto e = std::find_if(rewrites_.endpoints.begin(), rewrites_.endpoints.end(),
                          [&](const EndpointSite& s) { return s.node == c.node; });
    if (e == rewrites_.endpoints.end()) {
      alone.endpoints.push_back(c);
      continue;
    }
    // A memcpy between a caller's tensor and a constant (a memset names one
    // endpoint, which the scan left to the caller's tensor).
    if (c.tensor[0] >= 0) e->copy.srcPtr.ptr = reinterpret_cast<void*>(Moved(to, c.tensor[0], c.delta[0]));
    if (c.tensor[1] >= 0) e->copy.dstPtr.ptr = reinterpret_cast<void*>(Moved(to, c.tensor[1], c.delta[1]));
    ENCORE_RETURN_IF_ERROR(WriteBound(*e));
  }
  return WriteFoundSites(alone, to, execs);
}

ScanResult StagedForm::FindConstants(Args old_storage, std::span<const std::string> names, Args staying) const {
  ScanOptions options;
  options.names = names;
  options.staying = staying;
  const std::vector<cudaGraphNode_t> heads = head_nodes();
  return ReferenceScan::Run(graph_->get(), old_storage, {}, heads, nullptr, &options);
}

Status StagedForm::RebindConstants(ScanResult found, const Addresses& to) {
  bool adopted = false;
  for (size_t i = 0; i < variants_.size(); ++i) adopted |= variants_.at(i).extra.source != nullptr;
  if (adopted) variants_ = Cache(variants_.max_variants());
  std::vector<cudaGraphExec_t> execs;
  for (size_t i = 0; i < variants_.size(); ++i) execs.push_back(variants_.at(i).exec.get());
  ENCORE_RETURN_IF_ERROR(WriteFoundSites(found, to, execs));
  if (!adopted) return OkStatus();
  // A first executable again, its heads written first: a variant made since
  // the capture left its own addresses in the graph's heads, so
  // InstantiateFirst's reading of them would not hold.
  const Addresses captured = CapturedAddresses();
  ENCORE_ASSIGN_OR_RETURN(GraphExec exec, Instantiate(captured));
  variants_.Add(std::move(exec), captured);
  return OkStatus();
}

}  // namespace encore
