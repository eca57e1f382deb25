// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/store/internal/graph_cache.h"

#include <algorithm>
#include <utility>

namespace encore {

size_t GraphCache::Find(Args inputs, Args outputs, size_t first) const {
  for (size_t i = first; i < entries_.size(); ++i) {
    if (entries_[i]->signature.Matches(inputs, outputs)) return i;
  }
  return entries_.size();
}

GraphEntry& GraphCache::Touch(size_t i) {
  // The vector is the LRU order.
  std::rotate(entries_.begin(), entries_.begin() + i, entries_.begin() + i + 1);
  return *entries_.front();
}

bool GraphCache::AdoptLruExecutable(GraphEntry& entry) {
  if (entries_.empty() || entry.pieces.size() != 1) return false;
  GraphEntry& lru = *entries_.back();
  if (lru.pieces.size() != 1 || !lru.pieces[0].graphed || lru.pieces[0].conditional) return false;
  StagedForm& from = lru.pieces[0].staged;
  StagedForm& to = entry.pieces[0].staged;
  if (from.variants().empty() || from.heads().size() != to.heads().size()) return false;
  StagedForm::Cache::Variant& v = from.variants().mru();
  if (!v.exec.Update(*to.graph()).ok()) return false;
  // The executable now runs the new graph, but parameter rewrites must still
  // name nodes of the graph it was instantiated from.
  StagedExtra extra = v.extra.source ? v.extra : StagedExtra{from.graph(), from.head_nodes()};
  to.variants().Add(std::move(v.exec), to.CapturedAddresses(), std::move(extra));
  Erase(entries_.size() - 1);
  return true;
}

void GraphCache::Insert(std::unique_ptr<GraphEntry> entry, int max_graphs) {
  while (!entries_.empty() && static_cast<int>(entries_.size()) >= max_graphs) Erase(entries_.size() - 1);
  entries_.insert(entries_.begin(), std::move(entry));
}

namespace {

bool KeepsOwners(const GraphEntry& e) {
  for (const PieceGraph& p : e.pieces) {
    if (!p.kept.empty()) return true;
  }
  return false;
}

}  // namespace

void GraphCache::Erase(size_t i) {
  // A failed wait leaves nothing better to do than to drop them anyway; it
  // is the context's failure, which the next call reports.
  if (KeepsOwners(*entries_[i])) (void)last_->Wait();
  arena_->DropGraph(entries_[i]->id);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
}

void GraphCache::Clear() {
  while (!entries_.empty()) Erase(entries_.size() - 1);
}

}  // namespace encore
