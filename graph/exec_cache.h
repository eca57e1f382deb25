// SPDX-License-Identifier: Apache-2.0
// ExecCache: a method instance's captured graphs and their executables, in
// least-recently-used order. Each graph keeps up to MaxExecVariants(nodes)
// executables (policy/binding_policy.h), each staged or bound for one set of
// caller addresses, so callers that cycle through a few buffers replay small
// graphs with no parameter rewrite at all. Internal to graph/.
#ifndef ENCORE_GRAPH_EXEC_CACHE_H_
#define ENCORE_GRAPH_EXEC_CACHE_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "encore/allocator/graph_arena.h"
#include "encore/core/device_state.h"
#include "encore/core/log.h"
#include "encore/core/status.h"
#include "encore/core/tensor.h"
#include "encore/graph/graph.h"
#include "graph/address_set.h"   // private to graph/
#include "graph/direct_graph.h"  // private to graph/
#include "encore/graph/staging.h"
#include "encore/policy/binding_policy.h"
#include "encore/policy/call_signature.h"

namespace encore {

// A head staging node of one executable: its node handle (from the graph the
// executable was instantiated from) and the parameters the executable holds
// now, so a replay rewrites them only when an address moved.
struct HeadNode {
  cudaGraphNode_t node = nullptr;
  cudaKernelNodeParams launch{};  // func, grid, block from the captured node
  StageParams params{};
  size_t first = 0;  // index of the first input (and output) this node stages
};

// One executable of a graph, staged for one set of caller addresses.
struct ExecVariant {
  GraphExec exec;
  std::shared_ptr<Graph> source;  // the graph `exec` was instantiated from
  std::vector<HeadNode> heads;
  uint64_t last_use = 0;  // GraphEntry::uses when it was last bound
};

// One captured signature: its graph, executables and static buffers.
struct GraphEntry {
  uint64_t id = 0;  // the arena's capture id
  CallSignature signature;
  // The latest capture for this signature, and its head nodes with the
  // capture's parameters: the template new variants are instantiated from.
  std::shared_ptr<Graph> graph;
  std::vector<HeadNode> template_heads;
  // In the order they were made; the search starts at the last call's
  // (fixed buffers: the first look hits; buffers that rotate: the second).
  std::vector<ExecVariant> variants;
  size_t mru = 0;     // the last call's variant
  uint64_t uses = 0;  // binds of this graph's staged variants
  size_t nodes = 0;
  std::vector<TensorRef> static_inputs;
  std::vector<TensorRef> static_outputs;
  // Hashes of recent address sets that matched no variant: a set seen twice
  // earns its own executable.
  MissRing missed;
  // Launches of this graph, the capture launch included (verification
  // checks the first few of every graph).
  int64_t launches = 0;
  // Device state the captured body's shims advance on every launch.
  std::vector<DeviceStateRegion> device_states;
  // How this graph reaches the caller's buffers, and why.
  BindingChoice binding;
  int64_t rebind_sites = 0;
  // The direct form (binding=direct), or null: replays launch its
  // executables, and `variants` only when the caller's tensors overlap.
  std::unique_ptr<DirectGraph> direct;
  // binding=auto chose direct for a graph whose replays may rewrite many
  // nodes: re-judged once its replays show whether addresses recur.
  bool auto_rejudge = false;
};

// What a replay launches: the executable, and whether it bumps the
// device-check sequence (every staged graph does; a direct one only when its
// body calls Call::Check). Every graph's last node records the completion.
struct BoundExec {
  const GraphExec* exec = nullptr;
  bool bumps_sequence = true;
};

class ExecCache {
 public:
  // `arena` frees a graph's memory when the cache drops it; `log` and
  // `method` name the method in what the cache logs and returns.
  ExecCache(GraphArena* arena, const EventLog* log, const std::string* method)
      : arena_(arena), log_(log), method_(method) {}

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  GraphEntry& front() { return *entries_.front(); }
  const GraphEntry& front() const { return *entries_.front(); }
  const std::vector<std::unique_ptr<GraphEntry>>& entries() const { return entries_; }

  // The index of the graph captured for this call's signature, or size().
  size_t Find(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) const;
  // Makes entry i the most recently used; returns it.
  GraphEntry& Touch(size_t i);

  // The executable of `g` to launch for these caller addresses, its head
  // nodes rewritten where an address moved; makes a new variant for an
  // address set seen twice (counted in *new_variants). A direct graph's
  // executable unless the direct form cannot take these tensors (they
  // overlap, are unaligned, or CUDA refuses the rewrite): then the staged one.
  StatusOr<BoundExec> Bind(GraphEntry& g, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                           int64_t* new_variants);

  // Moves the least recently used graph's executable into `entry`, updated
  // in place to run entry's graph, and drops that graph. False (nothing
  // changed) when the cache is empty or CUDA refuses the update.
  bool AdoptLruExecutable(GraphEntry& entry);
  // Drops least recently used graphs until fewer than `max_graphs` remain,
  // then puts `entry` first.
  void Insert(std::unique_ptr<GraphEntry> entry, int max_graphs);
  void Clear() { entries_.clear(); }
  // Drops graph i, as the LRU does (padding's learned buckets that are no
  // longer chosen; the graph-memory budget).
  void Erase(size_t i);

 private:
  static bool VariantMatches(const ExecVariant& v, std::span<const TensorRef> inputs,
                             std::span<const TensorRef> outputs);
  // Rewrites the head nodes of `v` whose caller addresses changed.
  Status Restage(ExecVariant& v, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs);
  // The index of the variant to restage for an address set no variant
  // holds: a new one, or the least recently used.
  size_t VariantForNewAddresses(GraphEntry& g, std::span<const TensorRef> inputs,
                                std::span<const TensorRef> outputs, int64_t* new_variants);
  // An executable of g's graph with its heads set to these addresses.
  StatusOr<GraphExec> InstantiateBound(GraphEntry& g, std::span<const TensorRef> inputs,
                                       std::span<const TensorRef> outputs);
  void DropBack() { Erase(entries_.size() - 1); }

  GraphArena* const arena_;
  const EventLog* const log_;
  const std::string* const method_;
  std::vector<std::unique_ptr<GraphEntry>> entries_;  // most recently used first
};

}  // namespace encore

#endif  // ENCORE_GRAPH_EXEC_CACHE_H_
