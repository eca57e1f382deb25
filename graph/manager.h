// SPDX-License-Identifier: Apache-2.0
// Manager: registers methods and holds the defaults and per-method flags.
#ifndef ENCORE_GRAPH_MANAGER_H_
#define ENCORE_GRAPH_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/log_format.h"
#include "encore/core/status.h"
#include "encore/graph/method.h"
#include "encore/policy/method_flags.h"
#include "encore/policy/rank_consensus.h"

// The application's logger type; encore's headers name it without including
// spdlog, so an application with its own spdlog build gets one copy.
namespace spdlog {
class logger;
}  // namespace spdlog

namespace encore {

class CaptureWorker;
class EventLog;
class FlagsText;
class MemoryBudget;

struct ManagerOptions {
  MethodFlags defaults;
  // Per-method flags as text; empty means the environment variable
  // ENCORE_METHOD_FLAGS. Entries here override both `defaults` and the flags
  // a MethodSpec sets, so an operator can turn graphs off for one method
  // without a rebuild.
  std::string flags_text;
  // The logger to write events to; null means the process-wide "encore" one.
  // Every line encore writes for this Manager's methods goes here, the ones
  // from destructors included.
  std::shared_ptr<spdlog::logger> logger;
  // key=value text or one JSON object per line; unset means the environment
  // variable ENCORE_LOG_FORMAT (`json`, else text).
  std::optional<LogFormat> log_format;
  // Where to write each captured graph as Graphviz DOT,
  // `<dir>/<method>.dev<D>.graph<N>.dot` (the method name made safe for a
  // file name); empty means ENCORE_GRAPH_DUMP_DIR, and none if that is unset.
  std::string graph_dump_dir;
  // Ranks that run the same methods together (tensor parallel) agree on
  // every capture through this; null for a single rank. See RankConsensus.
  std::shared_ptr<RankConsensus> consensus;
  // Bytes of graph memory (every method's arena slabs: static inputs and
  // outputs, capture scratch) the manager may hold; 0 means no limit. A
  // capture that would go over it first drops least recently used graphs
  // of its own method, else runs the call eagerly with the reason
  // over_budget (event=over_budget once per method; counted in eager_calls
  // and over_budget_calls).
  size_t graph_memory_budget = 0;
};

class Manager {
 public:
  // Fails with InvalidArgument on a malformed flags text or bad defaults.
  static StatusOr<std::unique_ptr<Manager>> Create(ManagerOptions options = {});
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // InvalidArgument for an empty name, a missing fn, bad flags or a constant
  // with a null address; AlreadyExists for a name already registered.
  //
  // Names in the flags text that no method has: methods may be registered at
  // any time, even after others have run, so only the Manager's end knows
  // that a name was never registered. The first Run of any method logs, at
  // info, `flags_method_not_registered` for each name not registered by then
  // (an early hint for a typo); the destructor warns,
  // `unknown_method_in_flags`, for each name still not registered. A name
  // registered later, whenever that is, never gets the warning.
  StatusOr<Method*> Register(MethodSpec spec);
  // nullptr if no method has that name.
  Method* Find(std::string_view name);
  // {"methods":[{...},...],"encore_version":"0.2.0","schema_version":2}, one
  // object per method in name order (see MethodReport::ToJson). Schema 2:
  // real_rows and padded_rows count only the calls a padded graph answered
  // (1 counted every padded call's rows in real_rows).
  std::string ReportJson() const;
  static constexpr int kReportSchemaVersion = 2;

  // Waits until no capture=background capture of this manager's methods is
  // queued or being made (a graph made and not launched yet is not
  // pending: the next call of its signature launches it). A capture that
  // failed has turned its method's graphs off by then. FailedPrecondition
  // from inside a method's body, which the captures may wait for.
  Status WaitForCaptures();
  // Drops the capture=background captures of this manager's methods that
  // are queued and not begun (their signatures' next calls queue them
  // again); a capture being made goes on. How many were dropped. For an
  // application (or a binding) letting the manager go while something
  // still holds it: with WaitForCaptures after it, no capture body runs
  // any more unless a call queues one.
  size_t CancelPendingCaptures();

  // Gives back the device memory behind every method's graphs (the graph
  // arena: static inputs and outputs, intermediates and scratch from
  // Call::Allocate) while keeping their executables and every address they
  // hold; waits for the graphs' last launches first. Returns the bytes
  // given back. Not the callers' tensors, not the constants, not the
  // memory of a graph's memory nodes (a captured cudaMallocAsync: CUDA's
  // own, which cannot come back at the same addresses), and not slabs on a
  // device or driver without virtual memory management (event=sleep_kept).
  // What that memory held is lost (a graph writes its intermediates before
  // reading them; outputs a caller reads from the graph's own buffers,
  // copy_outputs=false, do not survive). A call of any method while asleep
  // wakes the manager first (event=wake reason=call). Sleeping when asleep
  // gives back nothing more. On an error the manager is woken again and
  // the error returned.
  StatusOr<int64_t> Sleep();
  // Maps memory back behind every graph, at the same addresses: the graphs
  // replay with no capture. A method whose memory cannot be mapped back (it
  // was taken while asleep) drops its graphs and captures again later
  // (event=wake_failed); the first such error is returned, and the manager
  // is awake either way. OK when awake.
  Status Wake();
  bool asleep() const { return asleep_.load(std::memory_order_acquire); }

 private:
  Manager(ManagerOptions options, std::unique_ptr<const FlagsText> text);
  // The flags-text names no registered method has, each once.
  std::vector<std::string> UnregisteredFlagNames() const;
  // Called by every method's first Run; logs once.
  void NoteUnregisteredFlagNames();
  // The hook a method runs before its first call (and its first after a
  // Sleep): the names above, and a wake of a sleeping manager.
  void OnRun(const std::string& method);
  // Wake with sleep_mu_ held; `reason` and `method` for the log line.
  Status WakeLocked(std::string_view reason, std::string_view method);

  const ManagerOptions options_;
  // The parser is private to encore (policy/internal/flags_text.h), so the
  // parsed text is held through a pointer to a type this header only names.
  const std::unique_ptr<const FlagsText> flags_text_;
  const std::shared_ptr<const EventLog> log_;
  const std::shared_ptr<MemoryBudget> budget_;
  // The thread background captures are made on; it outlives the methods,
  // which wait for their own captures before they go.
  const std::shared_ptr<CaptureWorker> worker_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<Method>, std::less<>> methods_;
  std::once_flag warned_unknown_;
  // Serializes Sleep and Wake (a call's wake waits for a sleep to end),
  // taken before mu_.
  std::mutex sleep_mu_;
  std::atomic<bool> asleep_{false};
};

}  // namespace encore

#endif  // ENCORE_GRAPH_MANAGER_H_
