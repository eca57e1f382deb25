// SPDX-License-Identifier: Apache-2.0
// Whether a captured graph is bound to the caller's buffers directly or
// staged, and why. Pure logic, no CUDA: graph/ fills BindingFacts from the
// captured graph and reports the choice (MethodReport::binding,
// binding_reason; event=binding).
#ifndef ENCORE_POLICY_BINDING_POLICY_H_
#define ENCORE_POLICY_BINDING_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "encore/policy/method_flags.h"

namespace encore {

// What is known about binding one captured graph directly.
struct BindingFacts {
  // Whether this build can search a captured graph's nodes (kernel
  // parameter words, memcpy and memset endpoints, child graphs) for the
  // caller's buffers and rewrite them on the executable. Until it can,
  // nothing else here is filled and every graph is staged.
  bool scan_available = false;
  // Why direct binding would be unsafe (a reference the scan cannot see or
  // rewrite, overlapping tensors, a tensor no node refers to, a failed
  // probe), or empty.
  std::string unsafe_reason;
  // Nodes to rewrite when every caller address moves, and whether the
  // caller's address sets recur (so executable variants absorb them).
  int64_t rewrite_nodes = 0;
  bool addresses_recur = false;
  // Recaptures the method has made so far.
  int64_t recaptures = 0;
};

// Under kAuto, a method that has recaptured more than this many times
// (shapes that keep changing) gets staged graphs: a direct form's capture
// (clone, scan, second instantiation, the probe's snapshots and syncs) cost
// about 4 ms on the H200 against 0.2 ms staged, more than its replays save.
inline constexpr int64_t kAutoMaxRecapturesForDirect = 8;

// Under kAuto, direct costs more than staging when a replay with new
// addresses must rewrite more nodes than this (about 0.2 µs each on an
// H200, against two staging nodes' launch and GPU time).
inline constexpr int64_t kAutoMaxRewriteNodes = 16;

// binding=auto cannot know at capture whether the caller's addresses will
// recur, so it binds directly and judges again after this many replays.
inline constexpr int64_t kAutoRejudgeAfter = 64;

// Whether the caller's address sets recur: at most one replay in four had
// to rewrite the graph.
inline bool AddressesRecur(int64_t replays, int64_t rewrites) { return rewrites * 4 <= replays; }

// Executables kept per graph for recurring caller address sets. On an
// H200, launching a different executable of a big graph each call costs GPU
// time (4 executables taking turns: about 0.25 µs per node at 128 and 512
// kernel nodes, nothing measurable at 32; bench/RESULTS.md), so a big graph
// keeps one executable and rewrites it instead.
inline constexpr size_t kVariantNodeBudget = 256;
inline constexpr size_t kMaxExecVariants = 8;
inline size_t MaxExecVariants(size_t nodes) {
  const size_t n = kVariantNodeBudget / (nodes == 0 ? 1 : nodes);
  return n < 1 ? 1 : n > kMaxExecVariants ? kMaxExecVariants : n;
}

struct BindingChoice {
  Binding binding = Binding::kStaged;  // kStaged or kDirect, never kAuto
  std::string reason;                  // why, for the report and the log
};

BindingChoice ChooseBinding(Binding requested, const BindingFacts& facts);

}  // namespace encore

#endif  // ENCORE_POLICY_BINDING_POLICY_H_
