// SPDX-License-Identifier: Apache-2.0
// Learned buckets and the measured padding rule together, on a serving
// trace, through the decisions a padded call takes on the GPU path
// (graph/runtime/dispatcher.cc: RunPadded, Decide, CarryOut; graph/pad:
// Padding::Observe, Review, EagerInstead, PadTimer): the learner's reviews,
// max_graphs, a bucket's graph captured when a call first needs it, and
// device times that the PadTimer would hand MeasuredPadding, read when a
// later call is timed. Pure logic, no CUDA: the times are a model.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "encore/policy/internal/capture_policy.h"
#include "encore/policy/internal/learned_buckets.h"
#include "encore/policy/internal/pad_policy.h"
#include "encore/policy/internal/padding_cost.h"
#include "encore/policy/method_flags.h"

namespace encore {
namespace {

// P(b) ~ 1/b over 1..top, as examples/serving draws its batches; sampled by
// hand from mt19937's words, so the trace is the same on every library.
std::vector<int64_t> ZipfTrace(int calls, int64_t top, uint32_t seed) {
  std::vector<double> cumulative;
  double sum = 0;
  for (int64_t b = 1; b <= top; ++b) cumulative.push_back(sum += 1.0 / static_cast<double>(b));
  std::mt19937 rng(seed);
  std::vector<int64_t> trace;
  for (int i = 0; i < calls; ++i) {
    const double u = static_cast<double>(rng()) / 4294967296.0 * sum;
    trace.push_back(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin() + 1);
  }
  return trace;
}

// Device microseconds of the model's runs. The defaults are those of
// examples/serving's 32-kernel model: an eager run is paced by the host's
// 32 launches (about 190 us, the device waiting between them), a padded
// replay is the graph's kernels (about 85 us) whatever the batch. The
// server takes turns over kBuffers sets of buffers: a graph's executable is
// bound to the set it was captured with; another set's first replay
// rewrites it (the host's time, inside the span), its second earns an
// executable of its own, instantiated and uploaded inside that replay's
// span (graph/binding/internal/variant_cache.h).
struct Timings {
  double eager_fixed = 190, eager_per_row = 0.05;
  double replay_fixed = 85, replay_per_row = 0.05;
  double rewrite = 15, new_executable = 500;
  double jitter = 0.03;  // each span off by up to this fraction
};
constexpr int kBuffers = 4;

struct TraceResult {
  std::vector<int64_t> change_calls;  // calls at which the buckets changed
  std::vector<int64_t> buckets;       // at the end
  size_t most_buckets = 0;
  size_t most_graphs = 0;
  std::map<std::string, int64_t> eager_by_reason;
  int64_t replays = 0, captures = 0;
  int64_t refused_after = 0;   // calls after `settled` sent eagerly for padding
  int64_t eager_after = 0;     // calls after `settled` run eagerly, any reason
  int64_t unassigned_after = 0;  // calls after `settled` no bucket held
};

// One padded method with learned buckets (no buckets listed) serving
// `trace`, as the dispatcher serves it with capture=foreground, no budget
// and one rank.
TraceResult Serve(const std::vector<int64_t>& trace, int max_graphs, const Timings& t, int64_t settled) {
  MethodFlags flags;
  flags.on_new_shape = ShapePolicy::kPad;
  flags.max_graphs = max_graphs;
  BucketLearner learner(max_graphs);
  MeasuredPadding cost;
  std::vector<int64_t> buckets;
  struct Graph {
    int64_t rows;
    std::array<int, kBuffers> replays_by_set{};  // the capture's set: 2 (its own executable)
  };
  std::vector<Graph> graphs;  // most recently used first, as GraphCache keeps them
  struct Span {
    bool replay;
    int64_t rows;
    double us;
  };
  std::vector<Span> pending;
  std::mt19937 noise(7);
  auto jittered = [&](double us) {
    return us * (1.0 + t.jitter * (2.0 * static_cast<double>(noise()) / 4294967296.0 - 1.0));
  };
  // PadTimer::Start: spans that ended are read, then this call is recorded.
  auto time = [&](bool replay, int64_t rows, double us) {
    if (!(replay ? cost.WantReplaySample(rows) : cost.WantEagerSample(rows))) return;
    for (const Span& s : pending) s.replay ? cost.AddReplay(s.rows, s.us) : cost.AddEager(s.rows, s.us);
    pending.assign(1, Span{replay, rows, us});
  };
  TraceResult r;
  int warmups_done = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const int64_t call = static_cast<int64_t>(i) + 1, b = trace[i];
    const int set = static_cast<int>(i % kBuffers);
    auto bucket_of = [&](int64_t batch) {
      const size_t k = BucketFor(buckets, batch);
      return k < buckets.size() ? buckets[k] : int64_t{-1};
    };
    // Padding::Observe, and the review with the graphs of buckets no
    // longer chosen dropped (Dispatcher::ReviewBuckets).
    learner.Observe(b, bucket_of(b) > 0);
    if (learner.review_due()) {
      if (std::optional<std::vector<int64_t>> next = learner.Review(buckets)) {
        buckets = *std::move(next);
        cost.KeepBuckets(buckets);
        std::erase_if(graphs, [&](const Graph& g) { return !std::binary_search(buckets.begin(), buckets.end(), g.rows); });
        r.change_calls.push_back(call);
        r.most_buckets = std::max(r.most_buckets, buckets.size());
      }
    }
    const int64_t rows = bucket_of(b);
    // Padding::EagerInstead, once per call (RunPadded).
    const bool pad_eager = rows > 0 && rows > b && cost.RunEagerly(b, rows);
    auto graph = std::find_if(graphs.begin(), graphs.end(), [&](const Graph& g) { return g.rows == rows; });
    DecisionInput in{&flags, false, warmups_done, !graphs.empty(), rows > 0 && graph != graphs.end()};
    in.padded = true;
    in.has_bucket = rows > 0;
    in.pad_eager = pad_eager;
    const Action action = Decide(in);
    const bool after = call > settled;
    const double eager_us = jittered(t.eager_fixed + t.eager_per_row * static_cast<double>(b));
    switch (action) {
      case Action::kWarmup:
        ++warmups_done;
        time(false, b, eager_us);
        break;
      case Action::kEagerOnce: {
        // Padding::EagerReason.
        const std::string reason = rows > 0 ? "padding" : buckets.empty() ? "no_buckets_yet" : "above_buckets";
        ++r.eager_by_reason[reason];
        r.refused_after += after && reason == "padding";
        r.eager_after += after;
        time(false, b, eager_us);
        break;
      }
      case Action::kCapture: {
        // The capture launch answers the call; it is not timed. GraphCache
        // drops the least recently used graph at the cap.
        ++r.captures;
        while (static_cast<int>(graphs.size()) >= max_graphs) graphs.pop_back();
        Graph g{rows};
        g.replays_by_set[set] = 2;
        graphs.insert(graphs.begin(), g);
        break;
      }
      case Action::kReplay: {
        ++r.replays;
        Graph g = *graph;
        graphs.erase(graph);
        double us = t.replay_fixed + t.replay_per_row * static_cast<double>(rows);
        int& seen = g.replays_by_set[set];
        if (seen == 0) us += t.rewrite;
        if (seen == 1) us += t.new_executable;
        seen = std::min(seen + 1, 2);
        graphs.insert(graphs.begin(), g);
        time(true, rows, jittered(us));
        break;
      }
      default:
        ADD_FAILURE() << "call " << call << ": an action the pad path does not take here";
    }
    r.unassigned_after += after && rows <= 0;
    r.most_graphs = std::max(r.most_graphs, graphs.size());
  }
  r.buckets = buckets;
  return r;
}

std::string Text(const std::map<std::string, int64_t>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += k + "=" + std::to_string(v) + " ";
  return s;
}

// The learned sizes settle within the first 1,000 calls, and from then on
// every call is held by a bucket that has its graph and replays it: the
// few replays that paid once (an executable instantiated for a set of
// buffers seen again) do not leave a bucket measured slower than eager.
TEST(LearnedPaddingTest, AZipfTraceSettlesThenEveryCallReplays) {
  constexpr int kCalls = 3000, kMaxGraphs = 6;
  constexpr int64_t kSettled = 1000;
  const std::vector<int64_t> trace = ZipfTrace(kCalls, 256, 2026);
  const TraceResult r = Serve(trace, kMaxGraphs, Timings{}, kSettled);
  ASSERT_FALSE(r.change_calls.empty());
  EXPECT_LE(r.change_calls.back(), kSettled) << "the buckets still change after call " << kSettled;
  EXPECT_LE(r.most_buckets, static_cast<size_t>(kMaxGraphs));
  EXPECT_LE(r.most_graphs, static_cast<size_t>(kMaxGraphs));
  EXPECT_EQ(r.unassigned_after, 0);
  EXPECT_EQ(r.refused_after, 0) << Text(r.eager_by_reason);
  EXPECT_EQ(r.eager_after, 0) << Text(r.eager_by_reason);
  // Before the first review (32 calls, 3 of them warmups) every call runs
  // eagerly; a handful more may while the first samples come in.
  int64_t eager = 0;
  for (const auto& [reason, n] : r.eager_by_reason) eager += n;
  EXPECT_LE(eager, 40) << Text(r.eager_by_reason);
  EXPECT_EQ(r.replays + r.captures + eager + 3, kCalls);
}

// The same with fewer graphs, and with costlier executables.
TEST(LearnedPaddingTest, SmallMaxGraphsAndSlowInstantiationsStillSettle) {
  const std::vector<int64_t> trace = ZipfTrace(3000, 256, 11);
  for (int max_graphs : {2, 3, 4}) {
    for (double new_executable : {300.0, 2000.0}) {
      Timings t;
      t.new_executable = new_executable;
      const TraceResult r = Serve(trace, max_graphs, t, 1000);
      SCOPED_TRACE("max_graphs=" + std::to_string(max_graphs) + " new_executable=" + std::to_string(new_executable));
      ASSERT_FALSE(r.change_calls.empty());
      EXPECT_LE(r.change_calls.back(), 1000);
      EXPECT_LE(r.most_graphs, static_cast<size_t>(max_graphs));
      EXPECT_EQ(r.unassigned_after, 0);
      EXPECT_EQ(r.eager_after, 0) << Text(r.eager_by_reason);
    }
  }
}

// Never slower than eager still holds: a device-bound body whose time
// grows with its rows (a replay of B runs B rows) sends calls far below
// their bucket eagerly, reason padding; only one in kSampleEvery of them
// replays, to keep its bucket measured.
TEST(LearnedPaddingTest, CallsStillRunEagerlyWhereEagerIsFaster) {
  const std::vector<int64_t> trace = ZipfTrace(3000, 256, 2026);
  Timings t;
  t.eager_fixed = 20;
  t.eager_per_row = 4;
  t.replay_fixed = 10;
  t.replay_per_row = 4;
  t.rewrite = t.new_executable = 0;
  const TraceResult r = Serve(trace, 6, t, 1000);
  EXPECT_GT(r.refused_after, 500) << Text(r.eager_by_reason);
  EXPECT_GT(r.replays, 0);
}

}  // namespace
}  // namespace encore
