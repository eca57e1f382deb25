// SPDX-License-Identifier: Apache-2.0
// Whether a captured graph is bound to the caller's buffers directly or
// staged, and why. Pure logic, no CUDA: graph/ fills BindingFacts from the
// captured graph and reports the choice (MethodReport::binding,
// binding_reason; event=binding).
#ifndef ENCORE_POLICY_INTERNAL_BINDING_POLICY_H_
#define ENCORE_POLICY_INTERNAL_BINDING_POLICY_H_

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
// recur, so it binds directly and judges again after this many replays:
// enough for a rotation over kMaxExecVariants buffer sets to come round
// three times.
inline constexpr int64_t kAutoRejudgeAfter = 256;

// Whether the caller's address sets recur: at most one replay in three had
// to rewrite an executable (a set seen once, or more recurring sets than
// the graph may keep executables for).
inline bool AddressesRecur(int64_t replays, int64_t rewrites) { return rewrites * 3 <= replays; }

// Executables kept per graph for recurring caller address sets. On an
// H200 (bench/binding_micro, 2026-12-01) switching executables costs nothing
// measurable: 64 executables of a 128-kernel graph taking turns ran at 0.97x
// the end-to-end time of one, 2 at 0.92x. Rewriting instead costs GPU time
// for the whole graph: one rewritten kernel parameter made the next launch
// of that 128-kernel graph 1.20x slower, all 128 rewritten 1.29x. So a
// graph keeps an executable per recurring set, within a node budget that
// bounds the executables' memory (a few hundred bytes per node).
inline constexpr size_t kVariantNodeBudget = 16384;
inline constexpr size_t kMaxExecVariants = 64;
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

#endif  // ENCORE_POLICY_INTERNAL_BINDING_POLICY_H_
