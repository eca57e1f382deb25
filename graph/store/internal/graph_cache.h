// SPDX-License-Identifier: Apache-2.0
// GraphCache: a method instance's captured signatures (GraphEntry), most
// recently used first. Dropping an entry frees its graph memory in the
// arena; its executables (VariantCache) live in the entry.
#ifndef ENCORE_GRAPH_STORE_INTERNAL_GRAPH_CACHE_H_
#define ENCORE_GRAPH_STORE_INTERNAL_GRAPH_CACHE_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "encore/allocator/internal/graph_arena.h"
#include "encore/core/tensor.h"
#include "encore/graph/store/internal/graph_entry.h"
#include "encore/graph/store/internal/last_launch.h"

namespace encore {

class GraphCache {
 public:
  // `last` is waited for before an entry whose pieces keep owners (Call::
  // KeepWithGraph: a framework's memory pool) is dropped, since the graph
  // may still be running on memory they would hand out again.
  GraphCache(GraphArena* arena, LastLaunch* last) : arena_(arena), last_(last) {}

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  GraphEntry& front() { return *entries_.front(); }
  const GraphEntry& front() const { return *entries_.front(); }
  const std::vector<std::unique_ptr<GraphEntry>>& entries() const { return entries_; }

  // The index of the entry captured for this call's signature, or size();
  // entries before `first` are not compared (the caller compared them).
  size_t Find(Args inputs, Args outputs, size_t first = 0) const;
  // Makes entry i the most recently used; returns it.
  GraphEntry& Touch(size_t i);
  // Moves the least recently used entry's executable into piece 0 of
  // `entry` (one piece each), updated in place to run entry's graph, and
  // drops that entry. False (nothing changed) when there is none to adopt
  // or CUDA refuses the update.
  bool AdoptLruExecutable(GraphEntry& entry);
  // Drops least recently used entries until fewer than `max_graphs` remain,
  // then puts `entry` first.
  void Insert(std::unique_ptr<GraphEntry> entry, int max_graphs);
  // Drops entry i, as the LRU does (padding's learned buckets that are no
  // longer chosen; the graph-memory budget).
  void Erase(size_t i);
  void Clear();

 private:
  GraphArena* const arena_;
  LastLaunch* const last_;
  std::vector<std::unique_ptr<GraphEntry>> entries_;  // most recently used first
};

}  // namespace encore

#endif  // ENCORE_GRAPH_STORE_INTERNAL_GRAPH_CACHE_H_
