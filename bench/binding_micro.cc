// SPDX-License-Identifier: Apache-2.0
// binding_micro [--json PATH] [K...]: what a replay costs when the caller's
// buffers move, for the ways a graph can follow them. K kernels of work (256
// floats, out = in + 1, then out += 1: every kernel names the output) over 2
// buffer pairs taking turns and over 64 pairs rotating.
//
// Each encore variant is compared with its matched bare twin: bare graphs
// with the same number of executables over the same buffers, ending in the
// same completion record node (kPairings), and with the fastest of the bare
// variants that do no more work than it (the twin, the twin without its
// record node, one executable over fixed buffers: the divisor). Ratios are
// taken repeat by repeat (the two ran in the same repeat) and reported as
// median [min-max] over the repeats; the order of all variants rotates
// repeat by repeat (bench_util's MeasureRotatingRepeats). A bare variant
// that does strictly more work than another yet ran faster (kMoreWork)
// makes the run's divisors suspect: its targets then print SUSPECT, never
// "met". Every variant's output is checked (out = in + K, on the pair the
// call names); a wrong one exits 1. The JSON (PATH, default
// ./binding_micro.json, and binding_micro.json in $OUT and $RESULTS) is
// what tools/perf_table.py reads.
#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/bench/micro_kernels.h"
#include "encore/encore.h"
#include "encore/examples/example_util.h"

namespace {

#define CK(x) EX_CUDA(x)  // examples/example_util.h: prints the call and exits on an error

constexpr int kN = 256;
constexpr int kBytes = kN * 4;
constexpr int kPairs = 64;
// More address sets than a method's executables (kMaxExecVariants, 64):
// each call is answered by rewriting one.
constexpr int kMany = 96;
constexpr int kRepeats = 9;

cudaError_t Work(const float* in, float* out, int k, cudaStream_t s) {
  return encore::bench::LaunchAddOneChain(in, out, kN, k, s);
}

cudaGraph_t Capture(const float* in, float* out, int k, cudaStream_t s) {
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(Work(in, out, k, s));
  CK(cudaStreamEndCapture(s, &g));
  return g;
}

cudaGraphExec_t Instantiate(cudaGraph_t g) {
  cudaGraphExec_t e;
  CK(cudaGraphInstantiate(&e, g, 0));
  return e;
}

cudaEvent_t NewEvent() {
  cudaEvent_t e;
  CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

// `g` with an event record node of `done` after its last kernel (the only
// one without a dependent: it was added last), instantiated.
cudaGraphExec_t InstantiateWithRecord(cudaGraph_t g, cudaEvent_t done) {
  size_t n = 0;
  CK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  CK(cudaGraphGetNodes(g, nodes.data(), &n));
  cudaGraphNode_t rec;
  CK(cudaGraphAddEventRecordNode(&rec, g, &nodes[n - 1], 1, done));
  return Instantiate(g);
}

// One executable whose kernel nodes are rewritten to the call's buffers.
struct Rewritable {
  cudaGraphExec_t exec = nullptr;
  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaKernelNodeParams> params;
  std::vector<int> reads_input;  // 1: argument 0 is the input; else the output
  const float* bound_in = nullptr;
  float* bound_out = nullptr;

  // `done`, if set: an event record node of it after the last kernel, as
  // encore's graphs end.
  Rewritable(cudaGraph_t g, const float* in, cudaEvent_t done = nullptr) {
    size_t n = 0;
    CK(cudaGraphGetNodes(g, nullptr, &n));
    nodes.resize(n);
    CK(cudaGraphGetNodes(g, nodes.data(), &n));
    for (cudaGraphNode_t node : nodes) {
      cudaKernelNodeParams p{};
      CK(cudaGraphKernelNodeGetParams(node, &p));
      reads_input.push_back(*static_cast<const float* const*>(p.kernelParams[0]) == in);
      params.push_back(p);
    }
    exec = done ? InstantiateWithRecord(g, done) : Instantiate(g);
  }

  // The same, through the graph and one cudaGraphExecUpdate (the
  // executable updated whole with the new addresses).
  void BindWhole(cudaGraph_t g, const float* in, float* out) {
    ForEachNode(in, out, /*moved_only=*/false,
                [&](size_t i, const cudaKernelNodeParams& p) { CK(cudaGraphKernelNodeSetParams(nodes[i], &p)); });
    cudaGraphExecUpdateResultInfo info{};
    CK(cudaGraphExecUpdate(exec, g, &info));
  }

  // Rewrites the executable's nodes that name a buffer that moved.
  void Bind(const float* in, float* out) {
    ForEachNode(in, out, /*moved_only=*/true, [&](size_t i, const cudaKernelNodeParams& p) {
      CK(cudaGraphExecKernelNodeSetParams(exec, nodes[i], &p));
    });
  }

 private:
  // `set(i, params)` for node i pointed at in/out (every node, or those
  // naming a buffer that moved), then in/out are what the nodes are bound to.
  template <class Set>
  void ForEachNode(const float* in, float* out, bool moved_only, Set set) {
    const bool in_moved = in != bound_in, out_moved = out != bound_out;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (moved_only && !out_moved && !(reads_input[i] && in_moved)) continue;
      const float* a0 = reads_input[i] ? in : out;
      float* a1 = out;
      int count = kN;
      void* args[] = {&a0, &a1, &count};
      cudaKernelNodeParams p = params[i];
      p.kernelParams = args;
      p.extra = nullptr;
      set(i, p);
    }
    bound_in = in;
    bound_out = out;
  }
};

using encore::bench::Stats;
using encore::bench::Timing;
using Runs = std::map<std::string, std::vector<Timing>>;

// A variant: its call, and the buffer pair call i writes (an index of
// in/out, or -1: the fixed buffers sin/sout).
struct Way {
  std::string name;
  std::function<void(int)> call;
  std::function<int(int)> pair;
  std::function<int(int)> out_pair = nullptr;  // the output's pair, when not `pair`'s
};

constexpr const char* kFloor = "bare graph, fixed buffers";
constexpr const char* kFloorRec = "bare graph + record node, fixed buffers";
constexpr const char* kFixed0 = "1 exec, pair 0 fixed";
constexpr const char* kFixed0Rec = "1 exec + record node, pair 0 fixed";
constexpr const char* kTwo = "2 executables taking turns (2 pairs)";
constexpr const char* kTwoRec = "2 execs + record node, one event";
constexpr const char* k64 = "64 executables rotating (64 pairs)";
constexpr const char* k64Rec = "64 execs + record node, one event";
constexpr const char* kManyRec = "64 execs + record node, one rewritten per call (96 pairs)";

// An encore variant, its matched bare twin (the same executables, buffers
// and record node; empty: no bare variant does its work) and the other bare
// variants that do no more work than it.
struct Pairing {
  const char* encore;
  const char* twin;
  std::vector<const char*> less;
};

constexpr const char* kTwoOwn = "2 execs + record node, own events";
constexpr const char* kTwoApi = "2 execs + cudaEventRecord after each";
constexpr const char* k64Own = "64 execs + record node, own events";
constexpr const char* k64Api = "64 execs + cudaEventRecord after each";

const std::vector<Pairing>& Pairings() {
  static const std::vector<Pairing> p = {
      {"encore auto, fixed buffers", kFixed0Rec, {kFixed0, kFloor, kFloorRec}},
      {"encore auto, 2 pairs", kTwoRec, {kTwo, kTwoOwn, kTwoApi, kFixed0Rec, kFixed0, kFloor, kFloorRec}},
      {"encore direct, 2 pairs", kTwoRec, {kTwo, kTwoOwn, kTwoApi, kFixed0Rec, kFixed0, kFloor, kFloorRec}},
      {"encore auto, 64 pairs", k64Rec, {k64, k64Own, k64Api, kFixed0Rec, kFixed0, kFloor, kFloorRec}},
      {"encore direct, 64 pairs", k64Rec, {k64, k64Own, k64Api, kFixed0Rec, kFixed0, kFloor, kFloorRec}},
      {"encore direct, 96 pairs (64 executables)",
       kManyRec,
       {k64Rec, k64, k64Own, k64Api, kFixed0Rec, kFixed0, kFloor, kFloorRec}},
      // Staged graphs copy in and out with nodes of their own.
      {"encore staged, 2 pairs", "", {kFixed0Rec, kFixed0, kFloor, kFloorRec}},
      {"encore staged, 64 pairs", "", {kFixed0Rec, kFixed0, kFloor, kFloorRec}},
  };
  return p;
}

// (less, more): the second does all the first does and more, so it cannot
// run faster; when it does, by over 5%, the run's divisors are suspect. (A
// record node on one executable launched every call has been seen to make
// its launch cheaper, so the fixed-buffer pairs are left out.)
const std::vector<std::pair<const char*, const char*>>& MoreWork() {
  static const std::vector<std::pair<const char*, const char*>> p = {
      {kTwo, kTwoRec}, {k64, k64Rec}, {k64Rec, kManyRec}};
  return p;
}

// A divisor whose repeats spread over more than this part of its median
// cannot judge a target: the target prints SUSPECT.
constexpr double kMaxDivisorSpread = 0.15;

Stats Of(const std::vector<Timing>& t, bool cpu) {
  std::vector<double> v;
  for (const Timing& x : t) v.push_back(cpu ? x.cpu_us : x.e2e_us);
  return encore::bench::StatsOf(v);
}

// a[r] / b[r] over the repeats.
Stats RatioOf(const std::vector<Timing>& a, const std::vector<Timing>& b, bool cpu) {
  std::vector<double> v;
  for (size_t r = 0; r < a.size() && r < b.size(); ++r) {
    v.push_back(cpu ? a[r].cpu_us / b[r].cpu_us : a[r].e2e_us / b[r].e2e_us);
  }
  return encore::bench::StatsOf(v);
}

std::string Cell(const Stats& s, const char* fmt = "%.2f") {
  char a[32], b[32], c[32];
  std::snprintf(a, sizeof(a), fmt, s.median);
  std::snprintf(b, sizeof(b), fmt, s.min);
  std::snprintf(c, sizeof(c), fmt, s.max);
  return std::string(a) + " [" + b + "-" + c + "]";
}

// The fastest (lowest median) of `p`'s twin and less-work variants.
std::string Divisor(const Runs& t, const Pairing& p, bool cpu) {
  std::string best;
  double best_median = 0;
  std::vector<const char*> names = p.less;
  if (*p.twin) names.push_back(p.twin);
  for (const char* n : names) {
    const double m = Of(t.at(n), cpu).median;
    if (best.empty() || m < best_median) {
      best = n;
      best_median = m;
    }
  }
  return best;
}

// One line per bare variant that did more work than another yet ran faster.
std::vector<std::string> Suspects(const Runs& t) {
  std::vector<std::string> out;
  for (const auto& [less, more] : MoreWork()) {
    for (bool cpu : {true, false}) {
      const double a = Of(t.at(less), cpu).median, b = Of(t.at(more), cpu).median;
      if (b < a * 0.95) {
        char buf[320];
        std::snprintf(buf, sizeof(buf), "'%s' (%s %.2f us) ran faster than '%s' (%.2f us), which does less work", more,
                      cpu ? "cpu" : "e2e", b, less, a);
        out.push_back(buf);
      }
    }
  }
  return out;
}

struct Target {
  const char* variant;
  bool cpu;
  double limit;
};

std::vector<Target> TargetsFor(int k) {
  if (k == 1) {
    return {{"encore auto, 2 pairs", true, 1.15}, {"encore auto, 64 pairs", true, 1.5},
            {"encore auto, 2 pairs", false, 1.10}, {"encore auto, 64 pairs", false, 1.10}};
  }
  if (k == 128) return {{"encore auto, 2 pairs", false, 1.02}, {"encore auto, 64 pairs", false, 1.02}};
  return {};
}

// Prints and records each variant, each pairing's ratios and the targets;
// returns the info entries (JSON text) of this K.
std::string Report(int k, const Runs& t, const std::vector<Way>& ways, encore::bench::ResultFile& res) {
  const std::string kk = "k" + std::to_string(k) + ".";
  std::printf("  %-58s %24s %24s\n", "variant (median [min-max] us over the repeats)", "cpu", "e2e");
  for (const Way& w : ways) {
    const Stats c = Of(t.at(w.name), true), e = Of(t.at(w.name), false);
    std::printf("  %-58s %24s %24s\n", w.name.c_str(), Cell(c).c_str(), Cell(e).c_str());
    res.Metric(kk + w.name + ".cpu_us", c, "us");
    res.Metric(kk + w.name + ".e2e_us", e, "us");
  }
  const std::vector<std::string> suspects = Suspects(t);
  for (const std::string& s : suspects) std::printf("  DIVISOR SUSPECT K=%d: %s: no target is judged\n", k, s.c_str());
  std::string info = "{\"suspect\": [";
  for (size_t i = 0; i < suspects.size(); ++i) info += (i ? ", " : "") + encore::bench::JsonQuote(suspects[i]);
  info += "], \"divisors\": {";
  int n = 0;
  for (const Pairing& p : Pairings()) {
    for (bool cpu : {true, false}) {
      const char* m = cpu ? "cpu" : "e2e";
      const std::string d = Divisor(t, p, cpu);
      const Stats vs_d = RatioOf(t.at(p.encore), t.at(d), cpu);
      res.Metric(kk + p.encore + "." + m + "_vs_divisor", vs_d, "x");
      info += std::string(n++ ? ", " : "") + encore::bench::JsonQuote(kk + p.encore + "." + m) + ": " +
              encore::bench::JsonQuote(d);
      std::string line = "  " + std::string(p.encore) + ", " + m + ": x" + Cell(vs_d, "%.3f") + " the fastest less-work '" + d + "'";
      if (*p.twin) {
        const Stats vs_t = RatioOf(t.at(p.encore), t.at(p.twin), cpu);
        res.Metric(kk + p.encore + "." + m + "_vs_twin", vs_t, "x");
        line += "; x" + Cell(vs_t, "%.3f") + " its twin '" + p.twin + "'";
      }
      std::printf("%s\n", line.c_str());
    }
  }
  info += "}, \"targets\": [";
  n = 0;
  for (const Target& g : TargetsFor(k)) {
    const Pairing& p = *std::find_if(Pairings().begin(), Pairings().end(),
                                     [&](const Pairing& x) { return std::string(x.encore) == g.variant; });
    const std::string d = Divisor(t, p, g.cpu);
    const Stats r = RatioOf(t.at(g.variant), t.at(d), g.cpu), ds = Of(t.at(d), g.cpu);
    const bool spread = ds.max - ds.min > kMaxDivisorSpread * ds.median;
    if (spread) {
      std::printf("  DIVISOR SUSPECT K=%d: '%s' spread %s us over the repeats (over %.0f%% of its median)\n", k,
                  d.c_str(), Cell(ds).c_str(), 100 * kMaxDivisorSpread);
    }
    const char* verdict = !suspects.empty() || spread ? "SUSPECT" : r.median <= g.limit ? "met" : "MISSED";
    std::printf("  TARGET K=%d %-24s %s <= %.2fx the fastest less-work bare variant: x%s %s\n", k, g.variant + 7,
                g.cpu ? "CPU" : "e2e", g.limit, Cell(r, "%.3f").c_str(), verdict);
    char buf[256];
    std::snprintf(buf, sizeof(buf), "{\"variant\": %s, \"metric\": \"%s\", \"limit\": %.3f, \"ratio\": %.4f, \"verdict\": \"%s\"}",
                  encore::bench::JsonQuote(g.variant).c_str(), g.cpu ? "cpu" : "e2e", g.limit, r.median, verdict);
    info += std::string(n++ ? ", " : "") + buf;
  }
  return info + "]}";
}

// Every way's output, for calls that name several pairs: out = in + K.
void CheckOutputs(int k, cudaStream_t s, const std::vector<Way>& ways, const std::vector<float*>& in,
                  const std::vector<float*>& out, float* sin, float* sout, encore::bench::ResultFile& res) {
  std::vector<float> x(kN), y(kN);
  for (const Way& w : ways) {
    std::string wrong;
    for (int i : {0, 1, 2, 63, 64, 95}) {
      const int p = w.pair(i), q = w.out_pair ? w.out_pair(i) : p;
      const float* src = p < 0 ? sin : in[p];
      float* dst = q < 0 ? sout : out[q];
      CK(cudaMemsetAsync(dst, 0, kBytes, s));
      w.call(i);
      CK(cudaStreamSynchronize(s));
      CK(cudaMemcpy(x.data(), src, kBytes, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(y.data(), dst, kBytes, cudaMemcpyDeviceToHost));
      for (int j = 0; j < kN && wrong.empty(); ++j) {
        if (y[j] != x[j] + k) wrong = "call " + std::to_string(i) + ", element " + std::to_string(j);
      }
    }
    res.Check("K=" + std::to_string(k) + " " + w.name + ": out = in + K", wrong.empty(), wrong);
  }
}

encore::Method* Register(encore::Manager& mgr, int k, encore::Binding binding, int serial) {
  encore::MethodSpec spec;
  spec.name = "k" + std::to_string(k) + "_" + std::string(encore::BindingName(binding)) + std::to_string(serial);
  spec.constants = std::vector<encore::Constant>{};
  encore::MethodFlags flags;
  flags.binding = binding;
  spec.flags = flags;
  spec.fn = [k](encore::Call& c) -> encore::Status {
    cudaError_t e =
        Work(static_cast<const float*>(c.input(0).data), static_cast<float*>(c.output(0).data), k, c.stream());
    return e == cudaSuccess ? encore::OkStatus() : encore::InternalError(cudaGetErrorName(e));
  };
  return *mgr.Register(spec);
}

// The bare variants: graphs launched by hand.
std::vector<Way> BareWays(int k, cudaStream_t s, const std::vector<float*>& in, const std::vector<float*>& out,
                          float* sin, float* sout) {
  const cudaGraphExec_t floor = Instantiate(Capture(sin, sout, k, s));
  const cudaGraphExec_t floor_rec = InstantiateWithRecord(Capture(sin, sout, k, s), NewEvent());
  const cudaGraphExec_t fixed0 = Instantiate(Capture(in[0], out[0], k, s));
  const cudaGraphExec_t fixed0_rec = InstantiateWithRecord(Capture(in[0], out[0], k, s), NewEvent());
  // Per pair: bare, and with a record node, all recording one event (as one
  // method's executables do) or each its own.
  std::vector<cudaGraphExec_t> bare, rec_shared, rec_own;
  const cudaEvent_t shared_done = NewEvent(), many_done = NewEvent();
  auto many = std::make_shared<std::vector<std::unique_ptr<Rewritable>>>();
  for (int p = 0; p < kPairs; ++p) {
    bare.push_back(Instantiate(Capture(in[p], out[p], k, s)));
    rec_shared.push_back(InstantiateWithRecord(Capture(in[p], out[p], k, s), shared_done));
    rec_own.push_back(InstantiateWithRecord(Capture(in[p], out[p], k, s), NewEvent()));
    many->push_back(std::make_unique<Rewritable>(Capture(in[p], out[p], k, s), in[p], many_done));
  }
  auto launch = [s](cudaGraphExec_t e) { CK(cudaGraphLaunch(e, s)); };
  auto fixed = [](int) { return -1; };
  auto zero = [](int) { return 0; };
  auto two = [](int i) { return i % 2; };
  auto sixty_four = [](int i) { return i % kPairs; };
  return {
      {kFloor, [=](int) { launch(floor); }, fixed},
      {kFloorRec, [=](int) { launch(floor_rec); }, fixed},
      {kFixed0, [=](int) { launch(fixed0); }, zero},
      {kFixed0Rec, [=](int) { launch(fixed0_rec); }, zero},
      {kTwo, [=](int i) { launch(bare[i % 2]); }, two},
      {k64, [=](int i) { launch(bare[i % kPairs]); }, sixty_four},
      {kTwoRec, [=](int i) { launch(rec_shared[i % 2]); }, two},
      {kTwoOwn, [=](int i) { launch(rec_own[i % 2]); }, two},
      {k64Rec, [=](int i) { launch(rec_shared[i % kPairs]); }, sixty_four},
      {k64Own, [=](int i) { launch(rec_own[i % kPairs]); }, sixty_four},
      {kManyRec,
       [=](int i) {
         Rewritable& r = *(*many)[i % kPairs];
         r.Bind(in[i % kMany], out[i % kMany]);
         launch(r.exec);
       },
       [](int i) { return i % kMany; }},
      {kTwoApi,
       [=](int i) {
         launch(bare[i % 2]);
         CK(cudaEventRecord(shared_done, s));
       },
       two},
      {k64Api,
       [=](int i) {
         launch(bare[i % kPairs]);
         CK(cudaEventRecord(shared_done, s));
       },
       sixty_four},
  };
}

// Bare variants that rewrite an executable's kernel nodes to the call's
// buffers, or launch executables rewritten once.
std::vector<Way> RewriteWays(int k, cudaStream_t s, const std::vector<float*>& in, const std::vector<float*>& out,
                             float* sin, float* sout) {
  auto rw2 = std::make_shared<Rewritable>(Capture(sin, sout, k, s), sin);
  auto rw64 = std::make_shared<Rewritable>(Capture(sin, sout, k, s), sin);
  auto rw_in = std::make_shared<Rewritable>(Capture(sin, sout, k, s), sin);
  const cudaGraph_t whole_graph = Capture(sin, sout, k, s);
  auto whole = std::make_shared<Rewritable>(whole_graph, sin);
  // 64 executables of one graph captured on the fixed buffers, each
  // rewritten once to its pair: what a variant made by rewriting costs.
  const cudaGraph_t shared = Capture(sin, sout, k, s);
  auto once = std::make_shared<std::vector<std::unique_ptr<Rewritable>>>();
  for (int p = 0; p < kPairs; ++p) {
    once->push_back(std::make_unique<Rewritable>(shared, sin));
    once->back()->Bind(in[p], out[p]);
  }
  auto launch = [s](cudaGraphExec_t e) { CK(cudaGraphLaunch(e, s)); };
  auto two = [](int i) { return i % 2; };
  auto sixty_four = [](int i) { return i % kPairs; };
  return {
      {"64 executables rewritten once, rotating", [=](int i) { launch((*once)[i % kPairs]->exec); }, sixty_four},
      {"2 executables rewritten once, taking turns", [=](int i) { launch((*once)[i % 2]->exec); }, two},
      {"1 executable, rewrite moved nodes, 2 pairs",
       [=](int i) {
         rw2->Bind(in[i % 2], out[i % 2]);
         launch(rw2->exec);
       },
       two},
      {"1 executable, rewrite moved nodes, 64 pairs",
       [=](int i) {
         rw64->Bind(in[i % kPairs], out[i % kPairs]);
         launch(rw64->exec);
       },
       sixty_four},
      {"1 executable, updated whole, 64 pairs",
       [=](int i) {
         whole->BindWhole(whole_graph, in[i % kPairs], out[i % kPairs]);
         launch(whole->exec);
       },
       sixty_four},
      {"1 executable, input moves (64), output fixed",
       [=](int i) {
         rw_in->Bind(in[i % kPairs], out[0]);
         launch(rw_in->exec);
       },
       sixty_four, [](int) { return 0; }},
  };
}

std::string RunK(int k, cudaStream_t s, encore::Manager& mgr, const std::vector<float*>& in,
                 const std::vector<float*>& out, float* sin, float* sout, encore::bench::ResultFile& res) {
  std::printf("K=%d\n", k);
  std::vector<Way> ways = BareWays(k, s, in, out, sin, sout);
  for (Way& w : RewriteWays(k, s, in, out, sin, sout)) ways.push_back(std::move(w));
  auto ti = std::make_shared<std::vector<encore::TensorRef>>(), to = std::make_shared<std::vector<encore::TensorRef>>();
  for (int p = 0; p < kMany; ++p) {
    ti->push_back(encore::TensorRef{in[p], encore::DType::kFloat32, {kN}, {}});
    to->push_back(encore::TensorRef{out[p], encore::DType::kFloat32, {kN}, {}});
  }
  std::vector<encore::Method*> methods;
  auto add = [&](const char* name, encore::Binding binding, std::function<int(int)> pair) {
    encore::Method* m = Register(mgr, k, binding, static_cast<int>(methods.size()));
    methods.push_back(m);
    ways.push_back({name,
                    [=](int i) {
                      const int p = pair(i);
                      encore::Status st = m->Run({&(*ti)[p], 1}, {&(*to)[p], 1}, s);
                      if (!st.ok()) {
                        std::fprintf(stderr, "Run: %s\n", st.ToString().c_str());
                        std::exit(1);
                      }
                    },
                    pair});
  };
  add("encore auto, fixed buffers", encore::Binding::kAuto, [](int) { return 0; });
  add("encore auto, 2 pairs", encore::Binding::kAuto, [](int i) { return i % 2; });
  add("encore auto, 64 pairs", encore::Binding::kAuto, [](int i) { return i % kPairs; });
  add("encore direct, 2 pairs", encore::Binding::kDirect, [](int i) { return i % 2; });
  add("encore direct, 64 pairs", encore::Binding::kDirect, [](int i) { return i % kPairs; });
  add("encore staged, 2 pairs", encore::Binding::kStaged, [](int i) { return i % 2; });
  add("encore staged, 64 pairs", encore::Binding::kStaged, [](int i) { return i % kPairs; });
  add("encore direct, 96 pairs (64 executables)", encore::Binding::kDirect, [](int i) { return i % kMany; });

  encore::bench::Variants v;
  for (const Way& w : ways) v.emplace_back(w.name, w.call);
  const int calls = k >= 128 ? 1000 : 2000;
  const Runs t = encore::bench::MeasureRotatingRepeats(s, calls, kRepeats, 100, v);
  std::string info = Report(k, t, ways, res);
  CheckOutputs(k, s, ways, in, out, sin, sout, res);
  for (encore::Method* m : methods) {
    encore::MethodReport r = m->Report();
    std::printf("  %s: binding %s, exec_variants %lld, replays %lld, eager %lld (%s)\n", r.name.c_str(),
                std::string(encore::BindingName(r.binding)).c_str(), static_cast<long long>(r.exec_variants),
                static_cast<long long>(r.replays), static_cast<long long>(r.eager_calls), r.binding_reason.c_str());
    res.Check("K=" + std::to_string(k) + " " + r.name + ": replayed, no eager call", r.replays > 0 && r.eager_calls == 0,
              "replays " + std::to_string(r.replays) + ", eager " + std::to_string(r.eager_calls));
    if (!m->Release().ok()) std::exit(1);
  }
  return info;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "binding_micro: no CUDA device visible\n");
    return 77;
  }
  std::string json = "binding_micro.json", command = "binding_micro";
  std::vector<int> ks;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    command += " " + a;
    if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
      command += " " + json;
    } else {
      ks.push_back(std::atoi(argv[i]));
    }
  }
  if (ks.empty()) ks = {1, 128};
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Inputs that differ by pair, so a call that wrote another pair's
  // output, or read another pair's input, shows.
  std::vector<float> host(kN);
  auto fill = [&](float* p, int pair) {
    for (int j = 0; j < kN; ++j) host[j] = static_cast<float>(pair * 1000 + j);
    CK(cudaMemcpy(p, host.data(), kBytes, cudaMemcpyHostToDevice));
  };
  std::vector<float*> in(kMany), out(kMany);
  for (int p = 0; p < kMany; ++p) {
    CK(cudaMalloc(&in[p], kBytes));
    CK(cudaMalloc(&out[p], kBytes));
    fill(in[p], p);
  }
  float *sin, *sout;
  CK(cudaMalloc(&sin, kBytes));
  CK(cudaMalloc(&sout, kBytes));
  fill(sin, kMany + 1);
  CK(cudaDeviceSynchronize());
  encore::ManagerOptions mo;
  mo.logger = std::make_shared<spdlog::logger>("quiet");
  auto mgr = *encore::Manager::Create(mo);
  encore::bench::ResultFile res("binding_micro", command, kRepeats);
  std::string info = "{";
  for (size_t i = 0; i < ks.size(); ++i) {
    info += (i ? ", " : "") + encore::bench::JsonQuote("k" + std::to_string(ks[i])) + ": " +
            RunK(ks[i], s, *mgr, in, out, sin, sout, res);
  }
  const bool ok = res.ok();
  std::printf("%s\n", ok ? "all result checks passed" : "FAILED: a result check failed");
  const std::vector<std::string> failed = encore::bench::WriteResults(res.Json(info + "}"), json, "binding_micro.json");
  for (const std::string& p : failed) std::fprintf(stderr, "could not write %s\n", p.c_str());
  return ok && failed.empty() ? 0 : 1;
}
