// SPDX-License-Identifier: Apache-2.0
// MethodFlags, the per-method switches, and the parser for their text form:
//   forward:graphs=on,warmup=3,on_new_shape=refuse;decode:graphs=off,checks=trap
// (`*` names every method). Pure logic, no CUDA.
#ifndef ENCORE_POLICY_METHOD_FLAGS_H_
#define ENCORE_POLICY_METHOD_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"

namespace encore {

// What a replay does when a call's inputs or outputs differ from the capture's.
// kPad: dim 0 of every tensor is the batch, and a call of batch b replays the
// graph of the smallest bucket >= b (MethodFlags::buckets), padded.
enum class ShapePolicy { kRefuse, kEager, kRecapture, kPad };
// What Call::Check does with a failed device check.
enum class CheckMode { kRecord, kTrap, kOff };
// How a graph reaches the caller's buffers: kStaged copies them into and out
// of static buffers inside the graph; kDirect rewrites the graph's own
// references to them; kAuto picks direct where it is safe and cheaper
// (policy/binding_policy.h).
enum class Binding { kStaged, kDirect, kAuto };

std::string_view ShapePolicyName(ShapePolicy p);
std::string_view CheckModeName(CheckMode m);
std::string_view BindingName(Binding b);
// "1|2|4|8" for {1, 2, 4, 8}; empty for none.
std::string BucketsText(const std::vector<int64_t>& buckets);

struct MethodFlags {
  bool graphs = true;
  int warmup_calls = 3;
  ShapePolicy on_new_shape = ShapePolicy::kRefuse;
  // Graphs kept per method under kRecapture; the least recently used goes.
  // Under kPad with learned buckets, the most buckets learned.
  int max_graphs = 4;
  CheckMode checks = CheckMode::kRecord;
  bool copy_outputs = true;
  Binding binding = Binding::kAuto;
  // Shadow checking (graph/verifier.h): the capture launch and the first
  // `verify` replays of every new graph, and every `verify_every`th replay,
  // are checked against an eager run of the same call.
  int verify = 0;
  int verify_every = 0;
  // 0: outputs must be bitwise equal; else |graph - eager| <= tol * max(1, |eager|).
  double verify_tolerance = 0;
  // Under kPad: the batch sizes graphs are captured for, ascending, each
  // kept whatever max_graphs says; empty means learned from the calls
  // (policy/learned_buckets.h). Flags text `buckets=1|2|4|8`.
  std::vector<int64_t> buckets;

  friend bool operator==(const MethodFlags&, const MethodFlags&) = default;
};

// The flags that decide when a method captures, replays, refuses or runs
// eagerly, as text ("graphs=on,warmup=3,on_new_shape=refuse,max_graphs=4").
// Ranks that vote on captures must agree on these: with different warmups,
// one rank votes while another runs an eager collective, and NCCL pairs the
// vote with that collective. verify and verify_every join the text only when
// set, since each verified launch of several ranks is a vote; buckets join
// it when listed, since they decide which captures happen. checks,
// copy_outputs and verify_tolerance are left out: they change no decision.
std::string DecisionFlagsText(const MethodFlags& flags);
// A 64-bit FNV-1a hash of DecisionFlagsText, stable across processes and
// builds, so ranks can compare it in one all-reduce.
uint64_t DecisionFlagsFingerprint(const MethodFlags& flags);

// Whether a graph's launch is checked against an eager run:
// `graph_launch` counts this graph's launches, 1 for the capture launch;
// `replay` counts the method's replays, this one included (0 for a capture
// launch).
bool VerifiesLaunch(const MethodFlags& flags, int64_t graph_launch, int64_t replay);

// Checks ranges (warmup_calls >= 0, max_graphs >= 1, verify, verify_every
// and verify_tolerance >= 0, buckets positive and strictly ascending);
// `what` names the owner.
Status ValidateMethodFlags(const MethodFlags& flags, std::string_view what);

// The flags one entry of the text sets; unset ones leave the base alone.
struct FlagOverrides {
  std::optional<bool> graphs;
  std::optional<int> warmup_calls;
  std::optional<ShapePolicy> on_new_shape;
  std::optional<int> max_graphs;
  std::optional<CheckMode> checks;
  std::optional<bool> copy_outputs;
  std::optional<Binding> binding;
  std::optional<int> verify;
  std::optional<int> verify_every;
  std::optional<double> verify_tolerance;
  std::optional<std::vector<int64_t>> buckets;

  void ApplyTo(MethodFlags& flags) const;
};

struct FlagEntry {
  std::string method;  // "*" for every method
  FlagOverrides overrides;
};

class FlagsText {
 public:
  // Parses the text form. Empty text (or only separators and spaces) is an
  // empty set. A malformed text is an InvalidArgument that quotes the bad token.
  static StatusOr<FlagsText> Parse(std::string_view text);

  // `base` with the `*` entries applied, then the entries naming `method`,
  // each in text order.
  MethodFlags Resolve(std::string_view method, MethodFlags base) const;
  // Names in the text, other than `*`, that are not in `known`.
  std::vector<std::string> UnknownMethods(const std::vector<std::string>& known) const;

  const std::vector<FlagEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<FlagEntry> entries_;
};

}  // namespace encore

#endif  // ENCORE_POLICY_METHOD_FLAGS_H_
