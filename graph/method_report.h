// SPDX-License-Identifier: Apache-2.0
// MethodReport: what a method did and why, per method (Method::Report, and
// Manager::ReportJson as JSON). Its counters are listed once, in
// ENCORE_METHOD_REPORT_COUNTERS, which the struct, the sum over devices and
// the JSON are all made from.
#ifndef ENCORE_GRAPH_METHOD_REPORT_H_
#define ENCORE_GRAPH_METHOD_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "encore/allocator/memory_stats.h"
#include "encore/core/tensor.h"
#include "encore/policy/method_flags.h"

// X(name): one int64_t counter of MethodReport, summed over devices.
#define ENCORE_METHOD_REPORT_COUNTERS(X)                                              \
  X(calls)                                                                            \
  X(warmup_calls)                                                                     \
  X(captures)                                                                         \
  X(replays)                                                                          \
  X(eager_calls)                                                                      \
  X(refusals)                                                                         \
  X(recaptures)                                                                       \
  X(capture_failures)                                                                 \
  X(instantiations)   /* executables made with cudaGraphInstantiate */                \
  X(updates_in_place) /* recaptures applied with cudaGraphExecUpdate */               \
  X(exec_variants)    /* extra executables made for recurring caller addresses */     \
  X(check_failures)                                                                   \
  X(verified_launches) /* launches checked against an eager run */                    \
  X(verify_failures)   /* checked launches whose results differed */                 \
  X(capture_us) /* microseconds in captures that made a graph: record to first launch */ \
  X(real_rows)   /* on_new_shape=pad: rows of the calls that launched a padded graph */ \
  X(padded_rows) /* on_new_shape=pad: zero rows those launches added */               \
  X(bucket_changes)    /* learned buckets: choices that changed the buckets */        \
  X(precaptures)       /* graphs captured by Method::Precapture */                    \
  X(over_budget_calls) /* calls run eagerly for graph_memory_budget */                \
  X(budget_drops)      /* graphs dropped to stay within graph_memory_budget */      \
  X(background_captures) /* captures made on the manager's worker (capture=background) */ \
  X(rebinds)           /* constants rebound by rewriting the graphs, no capture */

namespace encore {

enum class MethodPhase { kWarmup, kCapture, kReplay, kEager };
std::string_view MethodPhaseName(MethodPhase p);

// Why a call ran eagerly: the keys of MethodReport::eager_by_reason. A call
// made while graphs are off counts under the reason they went off.
namespace eager_reason {
inline constexpr std::string_view kGraphsOff = "graphs_off";          // graphs=off in the method's flags
inline constexpr std::string_view kCaptureFailed = "capture_failed";  // a capture failed (that call, and later ones)
inline constexpr std::string_view kVerifyFailed = "verify_failed";    // a verified launch differed from eager
inline constexpr std::string_view kHostConstant = "host_constant";    // a listed constant is in host memory
inline constexpr std::string_view kRanks = "ranks_disagree";          // another rank, a vote or the ranks' flags
inline constexpr std::string_view kNewShape = "new_shape";            // on_new_shape=eager and no graph matched
inline constexpr std::string_view kOverBudget = "over_budget";        // a new graph would exceed the memory budget
inline constexpr std::string_view kAboveBuckets = "above_buckets";    // pad: batch above the largest bucket
inline constexpr std::string_view kNoBuckets = "no_buckets_yet";      // pad: learned buckets not chosen yet
inline constexpr std::string_view kEmptyBatch = "empty_batch";        // pad: a batch of 0 rows
inline constexpr std::string_view kPadding = "padding";  // pad: a padded replay would be slower than eager
inline constexpr std::string_view kCapturing = "capturing";  // capture=background: its graph is being made (or queued)
// Counted by an adapter through Method::CountEagerCall (the Python package):
inline constexpr std::string_view kHostInput = "host_input";  // a host tensor among the arguments
inline constexpr std::string_view kAutograd = "autograd";     // a call with autograd to record
inline constexpr std::string_view kUnsupportedTensor = "unsupported_tensor";  // a tensor encore cannot describe
}  // namespace eager_reason

// One piece of the most recently used signature: a maximal run of non-eager
// stages (a method given as one fn is one piece), and how it runs.
struct PieceReport {
  std::vector<std::string> stages;
  bool graphed = false;  // replayed as a graph; else its stages run eagerly
  std::string reason;    // why not graphed, or the graph's binding reason
  size_t graph_nodes = 0;
  int64_t replays = 0;  // launches of this piece's graph after its capture
};

struct MethodReport {
  std::string name;
  MethodPhase phase = MethodPhase::kWarmup;
  MethodFlags flags;
#define ENCORE_X_(counter) int64_t counter = 0;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
  std::string graphs_off_reason;  // empty while graphs are on
  // Input shapes of each kept graph, most recently used first.
  std::vector<std::vector<Shape>> captured_input_shapes;
  // Nodes of the most recently used signature's graphs: every piece's, and
  // the nodes inside the bodies of its conditional nodes (Call::If, While).
  size_t graph_nodes = 0;
  // The most recent graph's binding (kStaged or kDirect) and why; the
  // parameter words and endpoints bound to caller buffers in that graph.
  Binding binding = Binding::kStaged;
  std::string binding_reason;
  int64_t rebind_sites = 0;
  MemoryStats memory;
  // Under on_new_shape=pad: the buckets in force (listed, or learned so far).
  std::vector<int64_t> buckets;
  // The method's graph memory: the arena slabs its graphs hold (static
  // inputs and outputs, capture scratch, staging tables), what
  // ManagerOptions::graph_memory_budget counts. Summed over devices.
  size_t graph_memory_bytes = 0;
  // With copy_outputs=false: the most recent graph's output buffers, valid
  // until the method's next call.
  std::vector<TensorRef> static_outputs;
  int devices = 1;  // devices the method has run on
  // Microseconds of the most recent capture (0 before any); over several
  // devices, the largest of each device's most recent, since a sum of two
  // "last" times means nothing.
  int64_t last_capture_us = 0;
  // eager_calls by reason (keys from eager_reason); the values add up to
  // eager_calls.
  std::map<std::string, int64_t, std::less<>> eager_by_reason;
  // The pieces of the most recently used signature (empty before a capture).
  std::vector<PieceReport> pieces;

  // Adds another device's counters and memory; keeps this one's shapes,
  // nodes and outputs, and its graphs-off reason unless it has none;
  // last_capture_us is the larger of the two.
  void AddDevice(const MethodReport& other);
  // One JSON object with every field above (static_outputs as their count).
  std::string ToJson() const;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_METHOD_REPORT_H_
