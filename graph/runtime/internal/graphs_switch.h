// SPDX-License-Identifier: Apache-2.0
// GraphsSwitch: the one owner of whether a method instance uses graphs, why
// not, and its phase (warmup, capture, replay, eager). Graphs go off for
// good (until the method is registered again) when the flags say so, a
// capture fails, a verified launch differs, a constant is in host memory or
// the ranks disagree; each reason has the code its eager calls are counted
// under (MethodReport::eager_by_reason).
#ifndef ENCORE_GRAPH_RUNTIME_INTERNAL_GRAPHS_SWITCH_H_
#define ENCORE_GRAPH_RUNTIME_INTERNAL_GRAPHS_SWITCH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "encore/graph/method_report.h"
#include "encore/policy/method_flags.h"

namespace encore {

class EventLog;

// The phase a method starts in, and after Release(), given its flags; and
// the reason Report gives when graphs=off.
MethodPhase StartingPhase(const MethodFlags& flags);
inline constexpr std::string_view kGraphsOffByFlags = "graphs=off in the method's flags";

class GraphsSwitch {
 public:
  GraphsSwitch(const MethodFlags& flags, const std::string* method, const EventLog* log);

  bool on() const { return !off_; }
  MethodPhase phase() const { return phase_; }
  // Why graphs are off (empty while on), and the eager_by_reason key of the
  // calls that run eagerly because of it.
  const std::string& reason() const { return reason_; }
  std::string_view reason_code() const { return code_; }

  void SetPhase(MethodPhase to, int64_t call);
  void TurnOff(std::string_view code, std::string reason, int64_t call);
  // After Release: the method warms up again, if graphs are on.
  void Restart(const MethodFlags& flags, int64_t call);

 private:
  const std::string* const method_;
  const EventLog* const log_;
  MethodPhase phase_;
  bool off_ = false;
  std::string reason_;
  std::string_view code_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_RUNTIME_INTERNAL_GRAPHS_SWITCH_H_
