// SPDX-License-Identifier: Apache-2.0
// MethodFlags, the per-method switches. Their text form,
//   forward:graphs=on,warmup=3,on_new_shape=refuse;decode:graphs=off,checks=trap
// (`*` names every method), is parsed by policy/internal/flags_text.h; every
// flag is described once, in policy/internal/flag_table.h. Pure logic, no CUDA.
#ifndef ENCORE_POLICY_METHOD_FLAGS_H_
#define ENCORE_POLICY_METHOD_FLAGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
// (policy/internal/binding_policy.h).
enum class Binding { kStaged, kDirect, kAuto };
// Where a capture is made. kForeground: on the call that needs the graph,
// which launches it. kBackground: that call (and every call of its
// signature until the graph is ready) runs eagerly and returns, while the
// manager's worker thread records the graph on a stream of its own; the
// first call after that launches it (docs/design.md "Capture in the
// background").
enum class CaptureMode { kForeground, kBackground };

std::string_view ShapePolicyName(ShapePolicy p);
std::string_view CheckModeName(CheckMode m);
std::string_view BindingName(Binding b);
std::string_view CaptureModeName(CaptureMode m);
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
  // Shadow checking (graph/verify/internal/verification.h): the capture launch and the first
  // `verify` replays of every new graph, and every `verify_every`th replay,
  // are checked against an eager run of the same call.
  int verify = 0;
  int verify_every = 0;
  // 0: outputs must be bitwise equal; else |graph - eager| <= tol * max(1, |eager|).
  double verify_tolerance = 0;
  // Under kPad: the batch sizes graphs are captured for, ascending, each
  // kept whatever max_graphs says; empty means learned from the calls
  // (policy/internal/learned_buckets.h). Flags text `buckets=1|2|4|8`.
  std::vector<int64_t> buckets;
  // Under kPad: a call of batch b runs eagerly (reason `padding`) when its
  // bucket holds more than max_padding * b rows. 0 (unset): encore decides
  // from what it measured, a padded replay against an eager run of b rows
  // (docs/design.md "Serving"). Flags text `max_padding=2`; 0 or >= 1.
  double max_padding = 0;
  // Flags text `capture=foreground|background`. Under kBackground the
  // method's body runs on the worker thread to be recorded, possibly while
  // a call runs it eagerly on another thread: its host code must allow
  // that. A method of several segments (an eager stage), one whose ranks
  // vote (RankConsensus) and Method::Precapture capture in the foreground.
  CaptureMode capture_mode = CaptureMode::kForeground;

  friend bool operator==(const MethodFlags&, const MethodFlags&) = default;
};

// Whether a graph's launch is checked against an eager run:
// `graph_launch` counts this graph's launches, 1 for the capture launch;
// `replay` counts the method's replays, this one included (0 for a capture
// launch).
bool VerifiesLaunch(const MethodFlags& flags, int64_t graph_launch, int64_t replay);

}  // namespace encore

#endif  // ENCORE_POLICY_METHOD_FLAGS_H_
