// SPDX-License-Identifier: Apache-2.0
// InstanceParts: everything one method instance (the method on one device)
// holds, each part an object with its own job. The engine (graph/engine)
// decides what each call does; the capture pipeline, the probe,
// verification and the replay path work on these parts. The owner's mutex
// serializes every use.
#ifndef ENCORE_GRAPH_INSTANCE_INTERNAL_INSTANCE_PARTS_H_
#define ENCORE_GRAPH_INSTANCE_INTERNAL_INSTANCE_PARTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "encore/allocator/internal/graph_arena.h"
#include "encore/allocator/internal/memory_budget.h"
#include "encore/core/internal/log.h"
#include "encore/core/internal/nvtx.h"
#include "encore/core/internal/rate_limiter.h"
#include "encore/core/internal/stream.h"
#include "encore/graph/method_report.h"
#include "encore/policy/method_flags.h"
#include "encore/policy/internal/method_votes.h"
#include "encore/policy/rank_consensus.h"
#include "encore/graph/checks/internal/device_checks.h"
#include "encore/graph/control/internal/body_stream_pool.h"
#include "encore/graph/control/internal/conditional_capture.h"
#include "encore/graph/control/internal/loop_record.h"
#include "encore/graph/instance/internal/body_runner.h"
#include "encore/graph/instance/internal/constant_set.h"
#include "encore/graph/instance/internal/graph_cache.h"
#include "encore/graph/instance/internal/graphs_switch.h"
#include "encore/graph/instance/internal/last_launch.h"
#include "encore/graph/instance/internal/method_body.h"
#include "encore/graph/internal/call_host.h"
#include "encore/graph/pad/internal/padding.h"
#include "encore/graph/verify/internal/constant_guard.h"
#include "encore/graph/verify/internal/verified_launch.h"

namespace encore {

// What the instance is made of, as the Method hands it over.
struct InstanceSpec {
  std::string name;
  MethodBody body;
  std::shared_ptr<ConstantSet> constants;
  MethodFlags flags;
  EventLog log;
  std::shared_ptr<RankConsensus> consensus;
  int device = 0;
  std::string graph_dump_dir;  // empty: no graph dumps
  std::shared_ptr<MemoryBudget> budget;  // the manager's graph memory; null: none
};

// This instance's share of the manager's graph-memory budget.
struct BudgetShare {
  std::shared_ptr<MemoryBudget> budget;
  size_t counted = 0;  // bytes of this instance the budget counts
  bool over_logged = false;
};

struct InstanceParts {
  InstanceParts(InstanceSpec spec, internal::CallHost* host);
  InstanceParts(const InstanceParts&) = delete;
  InstanceParts& operator=(const InstanceParts&) = delete;

  // An eager call, counted under `reason` (an eager_reason code).
  void CountEager(std::string_view reason);
  // Whether the calls need the constant guard (the probe of a direct
  // binding, or verification) and the method lists constants to guard.
  bool WantsGuard() const;
  // The guard of the constants listed now, made on first use (and anew when
  // they were replaced); null when none is listed. Not during a capture.
  StatusOr<ConstantGuard*> Guard(cudaStream_t stream);
  // Whether piece number `piece`'s graph ends in the completion record
  // node: the piece of the method's last segment, after which a call queues
  // nothing of the method's own. The other pieces, and a method ending in an
  // eager stage, leave it to LastLaunch::EndCall (one host record per
  // call; a node in the last piece spares that API call).
  bool PieceRecords(size_t piece) const {
    const Segment& last = body.segments().back();
    return last.piece && last.index == piece;
  }
  // The guard's limit on what it may save: a quarter of the free memory.
  size_t GuardBudget() const;
  // A failed device check or a loop stopped at its bound since the last
  // call, as the FailedPrecondition that call returns; OK otherwise.
  Status TakeDeviceFailure();

  const std::string name;
  const MethodBody body;
  const MethodFlags flags;
  const EventLog log;
  const int device;
  const std::string graph_dump_dir;
  const std::shared_ptr<ConstantSet> constants;
  const NvtxMethodRanges nvtx{name};
  RateLimiter refusal_log_limit;    // one refused line per second, then a count
  RateLimiter recapture_log_limit;  // likewise for recaptured lines (a server may recapture on most calls)

  GraphsSwitch graphs{flags, &name, &log};
  MethodReport counters;  // counts only; Report() fills the rest
  GraphArena arena;
  LastLaunch last_launch{&name};
  GraphCache cache{&arena, &last_launch};
  DeviceChecks checks{&name, flags.checks, &log};
  MethodVotes votes;
  Padding pad{flags};
  BudgetShare budget;
  BodyRunner runner;
  Stream capture_stream;  // for calls on the legacy default stream

  std::unique_ptr<ConstantGuard> guard;
  // Snapshot memory kept for the next verified launch while graphs are on.
  VerifyScratch verify_scratch;
  std::shared_ptr<const ConstantSet::List> guarded;  // the list `guard` was made for

  // Call::If and Call::While: the body streams and the runaway record,
  // made before the first capture of a method whose body used them (or
  // that captures on its first call); the capture recording now; a loop an
  // eager call stopped at its bound, reported at the next Run.
  bool uses_control = false;
  BodyStreamPool body_streams;
  LoopRecord loops;
  ConditionalCapture* recording = nullptr;
  std::string eager_runaway;

  int warmups_done = 0;
  uint64_t next_capture_id = 0;
  bool constants_checked = false;  // for host memory, since the last Release
  bool verify_refusal_logged = false;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_INSTANCE_INTERNAL_INSTANCE_PARTS_H_
