// SPDX-License-Identifier: Apache-2.0
// stages_micro [K] [--profile N]: what a piecewise method (MethodSpec::stages) costs per
// call. The method is three stages over 256 floats: K kernels (out = in + 1,
// then out += 1), an eager stage that asks the stream whether it is idle
// (cudaStreamQuery: a host decision no capture allows) and adds 1, and K
// kernels again. Variants take turns (bench_util's MeasureInterleaved):
//   floor            two bare graphs of K kernels and the eager stage's own
//                    work, launched by hand: what any runtime must do;
//   encore stages    the method, two graph pieces around the eager stage;
//   encore one fn    the same body as one fn, whose capture fails on the
//                    query, so encore runs it eagerly on every call;
//   raw eager        the 2K + 1 kernels and the query, launched by hand;
//   two one-fn methods  each chain a method of its own (a one-fn replay,
//                    record node included) with the eager work between:
//                    what the piece loop adds beyond two one-fn replays;
//   floor + ...      the floor with a completion mark: record nodes, a
//                    host cudaEventRecord, a counter kernel or a driver
//                    memory-op node as the second graph's last node,
//                    captured, or (record, counter) added after the
//                    capture as encore adds its record node;
//   floor, params set on clones / on execs  the floor's graphs with their
//                    kernels' parameters written back through the driver as
//                    graph/binding's direct form writes them;
//   floor on another buffer / on a late cudaMalloc  the floor's graphs on
//                    the next 4 KiB of the allocation every other variant
//                    writes, or on a buffer allocated last.
// Prints CPU (submit) and end-to-end microseconds per call, median of 41
// batches of 100, the floor first and last with its spread, the
// targets by the medians and over pairs from the same repeat, and runs every variant once more on its output poisoned, which
// must then hold 2K + 1 bit for bit. Exits 77
// without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/bench/completion_marks.h"
#include "encore/bench/exec_forms.h"
#include "encore/bench/micro_kernels.h"
#include "encore/encore.h"
#include "encore/examples/example_util.h"

namespace {

#define CK(x) EX_CUDA(x)  // examples/example_util.h: prints the call and exits on an error

constexpr int kN = 256;
constexpr int kBytes = kN * 4;

// The eager stage's own work. The query's answer is ignored: it stands for
// any host decision, and both cudaSuccess and cudaErrorNotReady are fine.
cudaError_t EagerWork(float* out, cudaStream_t s) {
  const cudaError_t q = cudaStreamQuery(s);
  if (q != cudaSuccess && q != cudaErrorNotReady) return q;
  return encore::bench::LaunchAddOne(out, out, kN, s);
}

encore::Status Ok(cudaError_t e) {
  return e == cudaSuccess ? encore::OkStatus() : encore::InternalError(cudaGetErrorName(e));
}

float* In(encore::Call& c) { return static_cast<float*>(c.input(0).data); }
float* Out(encore::Call& c) { return static_cast<float*>(c.output(0).data); }

encore::Method* RegisterStages(encore::Manager& mgr, int k) {
  encore::MethodSpec spec;
  spec.name = "stages";
  spec.constants = std::vector<encore::Constant>{};
  spec.stages = {
      {"first", [k](encore::Call& c) { return Ok(encore::bench::LaunchAddOneChain(In(c), Out(c), kN, k, c.stream())); }},
      {"decide", [](encore::Call& c) { return Ok(EagerWork(Out(c), c.stream())); }, /*eager=*/true},
      {"second", [k](encore::Call& c) { return Ok(encore::bench::LaunchAddOneChain(Out(c), Out(c), kN, k, c.stream())); }},
  };
  auto m = mgr.Register(std::move(spec));
  EX_OK(m.status());
  return *m;
}

encore::Method* RegisterChain(encore::Manager& mgr, const char* name, bool first, int k) {
  encore::MethodSpec spec;
  spec.name = name;
  spec.constants = std::vector<encore::Constant>{};
  spec.fn = [k, first](encore::Call& c) {
    return Ok(encore::bench::LaunchAddOneChain(first ? In(c) : Out(c), Out(c), kN, k, c.stream()));
  };
  auto m = mgr.Register(std::move(spec));
  EX_OK(m.status());
  return *m;
}

encore::Method* RegisterOneFn(encore::Manager& mgr, int k) {
  encore::MethodSpec spec;
  spec.name = "one_fn";
  spec.constants = std::vector<encore::Constant>{};
  spec.fn = [k](encore::Call& c) -> encore::Status {
    ENCORE_RETURN_IF_ERROR(Ok(encore::bench::LaunchAddOneChain(In(c), Out(c), kN, k, c.stream())));
    ENCORE_RETURN_IF_ERROR(Ok(EagerWork(Out(c), c.stream())));
    return Ok(encore::bench::LaunchAddOneChain(Out(c), Out(c), kN, k, c.stream()));
  };
  auto m = mgr.Register(std::move(spec));
  EX_OK(m.status());
  return *m;
}

void Print(const std::string& name, const encore::bench::Timing& t, const encore::bench::Timing& floor) {
  std::printf("  %-28s cpu %8.2f us (%5.2fx)   e2e %8.2f us (%5.2fx)\n", name.c_str(), t.cpu_us,
              t.cpu_us / floor.cpu_us, t.e2e_us, t.e2e_us / floor.e2e_us);
}

std::vector<float> Read(const float* p) {
  std::vector<float> v(kN);
  CK(cudaMemcpy(v.data(), p, kBytes, cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = encore::examples::RequireGpu("stages_micro")) return rc;
  // --profile N: only the encore stages variant, N calls (for a CPU profile
  // of the replay path under an external sampler such as perf).
  long profile = 0;
  int k = 64;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--profile" && i + 1 < argc) {
      profile = std::atol(argv[++i]);
    } else {
      k = std::atoi(argv[i]);
    }
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // One shared input of zeros and one output every variant writes, which
  // each call leaves as 2K + 1. Where a buffer lies changes what these
  // latency-bound kernels cost (on an H200 the floor read +3 us end to end
  // at K=64 on the next 4 KiB of one allocation, and +10-17 us for variants
  // on a later cudaMalloc), so variants compare on one buffer;
  // "floor on another buffer" and "on a late cudaMalloc" show that effect.
  constexpr size_t kSlot = 4096;
  float* pool = nullptr;
  CK(cudaMalloc(&pool, 3 * kSlot));
  auto slot = [&](int i) { return reinterpret_cast<float*>(reinterpret_cast<char*>(pool) + i * kSlot); };
  float *in = slot(0), *out = slot(1), *out_other = slot(2);
  CK(cudaMemset(in, 0, kBytes));
  auto mgr = *encore::Manager::Create();
  encore::Method* stages = RegisterStages(*mgr, k);
  encore::Method* one_fn = RegisterOneFn(*mgr, k);
  encore::Method* chain1 = RegisterChain(*mgr, "chain_first", true, k);
  encore::Method* chain2 = RegisterChain(*mgr, "chain_second", false, k);
  const cudaGraphExec_t first = encore::bench::CaptureChain(in, out, kN, k, s);
  const cudaGraphExec_t second = encore::bench::CaptureChain(out, out, kN, k, s);
  encore::TensorRef tin = encore::examples::Floats(in, {kN});
  encore::TensorRef t_out = encore::examples::Floats(out, {kN});
  // Two graphs around the eager stage's work on `dst`; `bumps`, when given,
  // counts the launches of a second graph ending in the counter kernel.
  auto floor_on = [&](cudaGraphExec_t a, float* dst, cudaGraphExec_t b, long* bumps = nullptr) {
    return [&, a, dst, b, bumps](int) {
      CK(cudaGraphLaunch(a, s));
      CK(EagerWork(dst, s));
      CK(cudaGraphLaunch(b, s));
      if (bumps != nullptr) ++*bumps;
    };
  };
  auto floor = floor_on(first, out, second);
  // The same with each graph ending in an event record node (encore's
  // completion record): what that node costs.
  cudaEvent_t ev;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  const cudaGraphExec_t first_rec = encore::bench::CaptureChain(in, out, kN, k, s, ev);
  const cudaGraphExec_t second_rec = encore::bench::CaptureChain(out, out, kN, k, s, ev);
  // The floor with `last` as its second graph: only that one ends in a
  // mark, as encore's last piece does (the earlier piece's end is covered
  // by it).
  auto floor_ending_in = [&](cudaGraphExec_t last, long* bumps = nullptr) { return floor_on(first, out, last, bumps); };
  encore::bench::CompletionMarks marks = encore::bench::MakeCompletionMarks(out, kN, k, s, ev);
  // The floor on the next 4 KiB of the same allocation, and on one
  // cudaMalloc'd after everything else.
  const cudaGraphExec_t first_other = encore::bench::CaptureChain(in, out_other, kN, k, s);
  const cudaGraphExec_t second_other = encore::bench::CaptureChain(out_other, out_other, kN, k, s);
  // The floor's graphs with their parameters written back as encore's
  // direct form writes them (bench/exec_forms), made by `make`.
  auto floor_made_by = [&](auto make) { return floor_on(make(in, out, kN, k, s), out, make(out, out, kN, k, s)); };
  auto after_launch = [](const float* a, float* b, int n, int kk, cudaStream_t st) {
    return encore::bench::CaptureChainSetOnExecAfterLaunch(a, b, n, kk, st, /*wait_for_launch=*/true);
  };
  auto in_launch = [](const float* a, float* b, int n, int kk, cudaStream_t st) {
    return encore::bench::CaptureChainSetOnExecAfterLaunch(a, b, n, kk, st, /*wait_for_launch=*/false);
  };
  float* out_late = nullptr;
  CK(cudaMalloc(&out_late, kBytes));
  const cudaGraphExec_t first_late = encore::bench::CaptureChain(in, out_late, kN, k, s);
  const cudaGraphExec_t second_late = encore::bench::CaptureChain(out_late, out_late, kN, k, s);
  if (marks.bump_last == nullptr || marks.added_record_last == nullptr || marks.added_bump_last == nullptr) {
    std::fprintf(stderr, "stages_micro: a completion mark's graph could not be captured\n");
    return 1;
  }
  if (profile > 0) {
    for (long i = 0; i < profile; ++i) {
      EX_OK(stages->Run({&tin, 1}, {&t_out, 1}, s));
      if (i % 256 == 255) CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    std::printf("stages_micro: %ld profiled calls, output %s\n", profile,
                Read(out) == std::vector<float>(kN, static_cast<float>(2 * k + 1)) ? "right" : "WRONG");
    return 0;
  }
  encore::bench::Variants v = {
      {"floor", floor},
      {"floor + record nodes", floor_on(first_rec, out, second_rec)},
      {"floor + last record node", floor_ending_in(second_rec)},
      {"floor + last counter kernel", floor_ending_in(marks.bump_last, &marks.bumps)},
      {"floor + added record node", floor_ending_in(marks.added_record_last)},
      {"floor + added counter kernel", floor_ending_in(marks.added_bump_last, &marks.bumps)},
      // Without the memory-op node (capture refused it), the same as the
      // last record node's: the line says so below.
      {"floor + last mem-op write", floor_ending_in(marks.write_last != nullptr ? marks.write_last : second_rec)},
      {"floor + one cudaEventRecord", [&](int i) {
         floor(i);
         CK(cudaEventRecord(ev, s));  // the alternative: one record per call from the host
       }},
      {"floor, params set on clones", floor_made_by(encore::bench::CaptureChainSetOnClone)},
      {"floor, params set on execs", floor_made_by(encore::bench::CaptureChainSetOnExec)},
      {"floor, set on execs, uploaded", floor_made_by(encore::bench::CaptureChainSetOnExecUploaded)},
      {"floor, set on execs after a launch", floor_made_by(after_launch)},
      {"floor, set on execs in a launch", floor_made_by(in_launch)},
      {"floor, set on execs (runtime)", floor_made_by(encore::bench::CaptureChainSetOnExecRuntime)},
      {"floor, execs updated whole", floor_made_by(encore::bench::CaptureChainUpdatedFromClone)},
      {"floor on another buffer", floor_on(first_other, out_other, second_other)},
      {"floor on a late cudaMalloc", floor_on(first_late, out_late, second_late)},
      {"encore stages", [&](int) { EX_OK(stages->Run({&tin, 1}, {&t_out, 1}, s)); }},
      {"encore one fn (eager)", [&](int) { EX_OK(one_fn->Run({&tin, 1}, {&t_out, 1}, s)); }},
      {"two one-fn methods", [&](int) {
         EX_OK(chain1->Run({&tin, 1}, {&t_out, 1}, s));
         CK(EagerWork(out, s));
         EX_OK(chain2->Run({}, {&t_out, 1}, s));  // no input: in place on its output
       }},
      {"raw eager", [&](int) {
         CK(encore::bench::LaunchAddOneChain(in, out, kN, k, s));
         CK(EagerWork(out, s));
         CK(encore::bench::LaunchAddOneChain(out, out, kN, k, s));
       }},
      {"floor again, last", floor},
  };
  // 100 calls a batch: about 400 launches queued, well under what the
  // stream holds, so the CPU time is submission alone, never a wait for a
  // full launch queue (the GPU is the slower side here).
  const auto runs = encore::bench::MeasureInterleavedRepeats(s, 100, 41, 50, v);
  CK(cudaStreamSynchronize(s));
  const std::map<std::string, encore::bench::Timing> t = encore::bench::Medians(runs);
  const encore::bench::Timing a = t.at("floor"), b = t.at("floor again, last");
  const encore::bench::Timing f{std::min(a.cpu_us, b.cpu_us), std::min(a.e2e_us, b.e2e_us)};
  std::printf("stages_micro K=%d (2 pieces of %d kernels around 1 eager kernel)\n", k, k);
  std::printf("  FLOOR first %.2f / last %.2f us cpu (spread %.1f%%), e2e %.2f / %.2f us (spread %.1f%%)\n", a.cpu_us,
              b.cpu_us, 100.0 * std::abs(a.cpu_us - b.cpu_us) / f.cpu_us, a.e2e_us, b.e2e_us,
              100.0 * std::abs(a.e2e_us - b.e2e_us) / f.e2e_us);
  const encore::bench::Timing& st = t.at("encore stages");
  if (st.cpu_us < f.cpu_us * 0.95 || st.e2e_us < f.e2e_us * 0.95) {
    std::printf("  FLOOR SUSPECT: encore stages ran faster than the floor, which does no more work\n");
  }
  for (const auto& [name, fn] : v) Print(name, t.at(name), f);

  // Each variant once more on its output poisoned (NaN): it must write
  // 2K + 1 there itself, not leave another variant's answer.
  const std::map<std::string, float*> buffer = {{"floor on another buffer", out_other},
                                                {"floor on a late cudaMalloc", out_late}};
  bool ok = true;
  const std::vector<float> want(kN, static_cast<float>(2 * k + 1));
  for (const auto& [name, fn] : v) {
    float* p = buffer.count(name) ? buffer.at(name) : out;
    CK(cudaMemsetAsync(p, 0xFF, kBytes, s));
    fn(0);
    CK(cudaStreamSynchronize(s));
    const bool equal = Read(p) == want;
    ok = ok && equal;
    std::printf("  output %-28s %s\n", name.c_str(), equal ? "bit-equal to 2K+1" : "WRONG");
  }
  // Every launch of the counter variant added exactly 1; the memory-op
  // node wrote its value.
  const bool counted = *marks.counter == static_cast<unsigned long long>(marks.bumps);
  ok = ok && counted && (marks.write_last == nullptr || *marks.flag == 1);
  std::printf("  counter %llu after %ld launches %s; mem-op node %s\n", *marks.counter, marks.bumps,
              counted ? "(equal)" : "(WRONG)",
              marks.write_last == nullptr ? "NOT CAPTURED (its line is the last record node's)"
                                          : (*marks.flag == 1 ? "wrote 1" : "did NOT write"));
  const encore::MethodReport rs = stages->Report(), rf = one_fn->Report();
  for (const encore::PieceReport& pr : rs.pieces) {
    std::printf("  piece %s: graphed %d, %zu nodes, %lld replays, reason: %s\n", pr.stages.front().c_str(),
                pr.graphed ? 1 : 0, pr.graph_nodes, static_cast<long long>(pr.replays), pr.reason.c_str());
  }
  std::printf("  stages: replays %lld, instantiations %lld, exec_variants %lld, pieces %zu graphed %d/%d; one fn: "
              "eager %lld (%s)\n",
              static_cast<long long>(rs.replays), static_cast<long long>(rs.instantiations),
              static_cast<long long>(rs.exec_variants), rs.pieces.size(),
              static_cast<int>(std::count_if(rs.pieces.begin(), rs.pieces.end(), [](auto& p) { return p.graphed; })),
              static_cast<int>(rs.pieces.size()), static_cast<long long>(rf.eager_calls), rf.graphs_off_reason.c_str());
  // The targets: replay <= two graph launches + the eager stage's own work +
  // 0.5 us of CPU; faster end to end than the eager method by at least what
  // graphs save on the other kernels (raw eager - floor).
  const double cpu_over = st.cpu_us - f.cpu_us;
  std::printf("  TARGET CPU stages - floor <= 0.50 us: %.2f us %s\n", cpu_over, cpu_over <= 0.5 ? "met" : "MISSED");
  const double gain = t.at("encore one fn (eager)").e2e_us - st.e2e_us, saving = t.at("raw eager").e2e_us - f.e2e_us;
  std::printf("  TARGET e2e one fn - stages >= raw eager - floor: %.2f >= %.2f us %s\n", gain, saving,
              gain >= saving ? "met" : "MISSED");
  // The same targets over pairs that ran side by side: in each repeat,
  // encore against the floor's lower reading of that repeat, and the gain
  // against the saving; the median over the 41 repeats and how many met.
  std::vector<double> cpu_pairs, e2e_margins;
  for (size_t r = 0; r < runs.at("floor").size(); ++r) {
    auto at = [&](const char* name) { return runs.at(name)[r]; };
    const double floor_cpu = std::min(at("floor").cpu_us, at("floor again, last").cpu_us);
    const double floor_e2e = std::min(at("floor").e2e_us, at("floor again, last").e2e_us);
    cpu_pairs.push_back(at("encore stages").cpu_us - floor_cpu);
    e2e_margins.push_back((at("encore one fn (eager)").e2e_us - at("encore stages").e2e_us) -
                          (at("raw eager").e2e_us - floor_e2e));
  }
  const auto met = [](const std::vector<double>& x, bool below, double bound) {
    return std::count_if(x.begin(), x.end(), [&](double d) { return below ? d <= bound : d >= bound; });
  };
  const double cpu_paired = encore::bench::Median(cpu_pairs), e2e_paired = encore::bench::Median(e2e_margins);
  std::printf("  PAIRED CPU stages - floor, median of %zu repeats: %.2f us (<= 0.50 in %ld) %s\n", cpu_pairs.size(),
              cpu_paired, static_cast<long>(met(cpu_pairs, true, 0.5)), cpu_paired <= 0.5 ? "met" : "MISSED");
  std::printf("  PAIRED e2e (one fn - stages) - (raw eager - floor), median: %.2f us (>= 0 in %ld) %s\n", e2e_paired,
              static_cast<long>(met(e2e_margins, false, 0.0)), e2e_paired >= 0 ? "met" : "MISSED");
  std::printf("  e2e floor on another buffer - floor = %.2f us; on a late cudaMalloc - floor = %.2f us\n",
              t.at("floor on another buffer").e2e_us - f.e2e_us, t.at("floor on a late cudaMalloc").e2e_us - f.e2e_us);
  // The two eager variants launch the same kernels; how far apart they read
  // is the noise in the line above.
  std::printf("  eager baselines: one fn (eager) - raw eager = %.2f us e2e\n",
              t.at("encore one fn (eager)").e2e_us - t.at("raw eager").e2e_us);
  const std::string json = "{\"k\": " + std::to_string(k) + ", \"floor_cpu_us\": " + std::to_string(f.cpu_us) +
                           ", \"stages_cpu_us\": " + std::to_string(st.cpu_us) + ", \"floor_e2e_us\": " +
                           std::to_string(f.e2e_us) + ", \"stages_e2e_us\": " + std::to_string(st.e2e_us) +
                           ", \"floor_on_another_buffer_e2e_us\": " + std::to_string(t.at("floor on another buffer").e2e_us) +
                           ", \"paired_cpu_over_us\": " + std::to_string(cpu_paired) +
                           ", \"paired_e2e_margin_us\": " + std::to_string(e2e_paired) +
                           ", \"floor_on_late_buffer_e2e_us\": " + std::to_string(t.at("floor on a late cudaMalloc").e2e_us) +
                           ", \"one_fn_e2e_us\": " + std::to_string(t.at("encore one fn (eager)").e2e_us) +
                           ", \"raw_eager_e2e_us\": " + std::to_string(t.at("raw eager").e2e_us) +
                           ", \"last_record_node_cpu_us\": " + std::to_string(t.at("floor + last record node").cpu_us) +
                           ", \"host_record_cpu_us\": " + std::to_string(t.at("floor + one cudaEventRecord").cpu_us) +
                           ", \"counter_kernel_cpu_us\": " + std::to_string(t.at("floor + last counter kernel").cpu_us) +
                           ", \"added_record_node_cpu_us\": " + std::to_string(t.at("floor + added record node").cpu_us) +
                           ", \"added_record_node_e2e_us\": " + std::to_string(t.at("floor + added record node").e2e_us) +
                           ", \"added_counter_kernel_cpu_us\": " +
                           std::to_string(t.at("floor + added counter kernel").cpu_us) +
                           ", \"added_counter_kernel_e2e_us\": " +
                           std::to_string(t.at("floor + added counter kernel").e2e_us) +
                           ", \"memop_write_cpu_us\": " +
                           (marks.write_last ? std::to_string(t.at("floor + last mem-op write").cpu_us) : "null") +
                           ", \"outputs_equal\": " + (ok ? "true" : "false") + "}\n";
  (void)encore::bench::WriteResults(json, "", "stages_micro.json");
  return ok && rs.replays > 0 && rs.pieces.size() == 2 ? 0 : 1;
}
