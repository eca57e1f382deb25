// SPDX-License-Identifier: Apache-2.0
// device_loop_micro [--steps N] [--calls N] [--repeats N] [--json PATH]: what
// a loop decided on the device costs against one launch per step. Each
// "call" runs N steps (default 64) of the same work, a busy kernel of about
// 1 us and about 50 us, then a countdown kernel that sets the loop's flag:
//   while        one launch of a graph with a WHILE node (graph/control's
//                ConditionalCapture) whose body is one step;
//   per-step     N launches of a one-step graph;
//   per-step+read N launches of the one-step graph, each followed by a host
//                read of the flag (a stream sync): the loop decided on the
//                host, as a method without While would have to.
// Variants take turns (repeat r of each before repeat r + 1 of any); medians
// of the repeats. Printed per step: CPU (submitting), GPU (events around the
// calls) and end-to-end microseconds, and host syncs. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "encore/bench/device_loop_kernels.h"
#include "encore/core/cuda_error.h"
#include "encore/core/internal/device_memory.h"
#include "encore/graph/internal/graph.h"
#include "encore/graph/internal/stream_capture.h"
#include "encore/graph/control/internal/conditional_capture.h"
#include "encore/graph/control/internal/conditional_support.h"
#include "encore/graph/control/internal/eager_control.h"
#include "encore/graph/control/internal/loop_record.h"

namespace {

using encore::BodyStreamPool;
using encore::ConditionalCapture;
using encore::GraphExec;
using encore::Status;
using encore::StatusOr;
namespace bench = encore::bench;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  std::exit(1);
}
void CheckCuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) Fail(std::string(what) + ": " + cudaGetErrorName(err));
}
void CheckOk(const Status& s, const char* what) {
  if (!s.ok()) Fail(std::string(what) + ": " + s.ToString());
}
template <class T>
T CheckOk(StatusOr<T> v, const char* what) {
  if (!v.ok()) Fail(std::string(what) + ": " + v.status().ToString());
  return *std::move(v);
}
#define CK(expr) CheckCuda((expr), #expr)
#define OK(expr) CheckOk((expr), #expr)

double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Options {
  int steps = 64;
  int calls = 20;
  int repeats = 9;
  std::string json;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--steps") o.steps = std::atoi(argv[i + 1]);
    else if (flag == "--calls") o.calls = std::atoi(argv[i + 1]);
    else if (flag == "--repeats") o.repeats = std::atoi(argv[i + 1]);
    else if (flag == "--json") o.json = argv[i + 1];
    else Fail("unknown flag " + flag + " (known: --steps --calls --repeats --json)");
  }
  if (o.steps < 1 || o.calls < 1 || o.repeats < 1) Fail("--steps, --calls and --repeats must be at least 1");
  return o;
}

// What every graph of the benchmark shares.
struct Env {
  cudaStream_t s = nullptr;
  BodyStreamPool pool;
  encore::LoopCounters counters;
  encore::LoopRecord record;
  int* left = nullptr;
  bool* go = nullptr;
  bool* pinned_flag = nullptr;
};

// One step: the work, then the countdown.
Status Step(long long cycles, unsigned long long* counter, Env& env, cudaStream_t st) {
  if (cudaError_t e = bench::LaunchBusyStep(cycles, counter, st); e != cudaSuccess) return encore::CudaStatus(e, "busy");
  if (cudaError_t e = bench::LaunchCountdownStep(env.left, env.go, st); e != cudaSuccess) {
    return encore::CudaStatus(e, "countdown");
  }
  return encore::OkStatus();
}

GraphExec Capture(Env& env, const std::function<Status(ConditionalCapture&)>& fn) {
  auto capture = OK(encore::StreamCapture::Begin(env.s));
  ConditionalCapture cc({&env.pool, &env.counters, env.record.device()});
  OK(fn(cc));
  bool capture_error = false;
  encore::Graph g = OK(capture.End(&capture_error));
  return OK(GraphExec::Instantiate(g));
}

GraphExec CaptureLoop(Env& env, int steps, long long cycles, unsigned long long* counter) {
  return Capture(env, [&](ConditionalCapture& cc) -> Status {
    if (cudaError_t e = bench::LaunchCountdownInit(env.left, env.go, steps, env.s); e != cudaSuccess) {
      return encore::CudaStatus(e, "init");
    }
    return cc.AddWhile(
        env.s, env.go, [&](cudaStream_t bs) { return Step(cycles, counter, env, bs); }, steps, 0);
  });
}

GraphExec CaptureStep(Env& env, long long cycles, unsigned long long* counter) {
  return Capture(env, [&](ConditionalCapture&) { return Step(cycles, counter, env, env.s); });
}

// Busy-kernel cycles for about `us` microseconds, and what one such kernel
// takes alone (GPU time, us).
std::pair<long long, double> Calibrate(cudaStream_t s, double us, unsigned long long* counter) {
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  long long cycles = static_cast<long long>(us * khz / 1000.0);
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  double per = 0;
  for (int round = 0; round < 2; ++round) {
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < 50; ++i) CK(bench::LaunchBusyStep(cycles, counter, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    per = ms * 1000.0 / 50;
    if (round == 0 && per > 0) cycles = std::max(1LL, static_cast<long long>(cycles * us / per));
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return {cycles, per};
}

struct Variant {
  std::string name;
  std::function<void()> call;  // one call: `steps` steps
  int syncs_per_step;
  unsigned long long* counter;
  std::vector<double> cpu, gpu, e2e;  // per step, one entry per repeat
};

void Measure(cudaStream_t s, std::vector<Variant>& variants, const Options& o) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (Variant& v : variants) v.call();  // warmup: one call each
  CK(cudaStreamSynchronize(s));
  const double per = 1.0 / (static_cast<double>(o.calls) * o.steps);
  for (int r = 0; r < o.repeats; ++r) {
    for (Variant& v : variants) {
      CK(cudaStreamSynchronize(s));
      CK(cudaEventRecord(a, s));
      const double t0 = NowUs();
      for (int i = 0; i < o.calls; ++i) v.call();
      const double t1 = NowUs();
      CK(cudaEventRecord(b, s));
      CK(cudaStreamSynchronize(s));
      const double t2 = NowUs();
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      v.cpu.push_back((t1 - t0) * per);
      v.e2e.push_back((t2 - t0) * per);
      v.gpu.push_back(ms * 1000.0 * per);
    }
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
}

// Runs the three variants for one size of work; appends its JSON object.
void RunWork(Env& env, const Options& o, double target_us, std::string* json) {
  encore::DeviceMemory counters = OK(encore::DeviceMemory::Allocate(4 * sizeof(unsigned long long)));
  unsigned long long* c = counters.as<unsigned long long>();
  CK(cudaMemsetAsync(c, 0, 4 * sizeof(unsigned long long), env.s));
  auto [cycles, busy_us] = Calibrate(env.s, target_us, c + 3);
  env.counters.Release();  // the previous size's graphs are gone
  GraphExec loop = CaptureLoop(env, o.steps, cycles, c + 0);
  GraphExec step = CaptureStep(env, cycles, c + 1);
  GraphExec step_read = CaptureStep(env, cycles, c + 2);
  std::vector<Variant> variants;
  variants.push_back({"while (1 launch)", [&] { OK(loop.Launch(env.s)); }, 0, c + 0});
  variants.push_back({"per-step (N launches)", [&] {
                        for (int i = 0; i < o.steps; ++i) OK(step.Launch(env.s));
                      }, 0, c + 1});
  variants.push_back({"per-step+read (N launches, N syncs)", [&] {
                        CK(bench::LaunchCountdownInit(env.left, env.go, o.steps, env.s));
                        bool more = true;
                        while (more) {
                          OK(step_read.Launch(env.s));
                          more = OK(encore::ReadFlag(env.go, env.s, env.pinned_flag));
                        }
                      }, 1, c + 2});
  Measure(env.s, variants, o);
  CK(cudaStreamSynchronize(env.s));
  unsigned long long got[3];
  CK(cudaMemcpy(got, c, sizeof got, cudaMemcpyDeviceToHost));
  const unsigned long long want = static_cast<unsigned long long>(1 + o.repeats * o.calls) * o.steps;
  for (int i = 0; i < 3; ++i) {
    if (got[i] != want) Fail(variants[i].name + ": ran " + std::to_string(got[i]) + " steps, not " + std::to_string(want));
  }
  if (env.record.pending()) Fail("a loop reached its bound: the countdown did not end it");

  std::printf("\nwork ~%.0f us per step (busy kernel alone: %.2f us GPU), %d steps per call, %d calls x %d repeats\n",
              target_us, busy_us, o.steps, o.calls, o.repeats);
  std::printf("  %-38s %10s %10s %10s %7s\n", "variant (per step)", "cpu us", "gpu us", "e2e us", "syncs");
  const double base_gpu = Median(variants[1].gpu), base_cpu = Median(variants[1].cpu);
  *json += std::string(json->empty() ? "" : ",\n") + "  {\"work_us\": " + std::to_string(target_us) +
           ", \"busy_kernel_gpu_us\": " + std::to_string(busy_us) + ", \"steps\": " + std::to_string(o.steps) +
           ", \"variants\": [";
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    const double cpu = Median(v.cpu), gpu = Median(v.gpu), e2e = Median(v.e2e);
    std::printf("  %-38s %10.3f %10.3f %10.3f %7d   cpu %.2fx  gpu %.2fx of per-step\n", v.name.c_str(), cpu, gpu,
                e2e, v.syncs_per_step, cpu / base_cpu, gpu / base_gpu);
    *json += std::string(i ? ", " : "") + "{\"name\": \"" + v.name + "\", \"cpu_us_per_step\": " +
             std::to_string(cpu) + ", \"gpu_us_per_step\": " + std::to_string(gpu) +
             ", \"e2e_us_per_step\": " + std::to_string(e2e) + ", \"host_syncs_per_step\": " +
             std::to_string(v.syncs_per_step) + "}";
  }
  *json += "]}";
  const double loop_cpu = Median(variants[0].cpu), loop_gpu = Median(variants[0].gpu);
  std::printf("  while: %.3f us CPU per step (target <= 0.1); GPU %.2fx of per-step (target <= 1.3 at >= 50 us); "
              "per-iteration overhead over the busy kernel alone: %.2f us\n",
              loop_cpu, loop_gpu / base_gpu, loop_gpu - busy_us);
}

void WriteJson(const std::string& text, const std::string& path) {
  std::vector<std::string> paths;
  if (!path.empty()) paths.push_back(path);
  for (const char* env : {"OUT", "RESULTS"}) {
    const char* dir = std::getenv(env);
    if (dir != nullptr && *dir != '\0') paths.push_back(std::string(dir) + "/device_loop_micro.json");
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  for (const std::string& p : paths) {
    std::ofstream f(p);
    f << text;
    std::printf(f.good() ? "wrote %s\n" : "could not write %s\n", p.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "device_loop_micro: no CUDA device visible; exiting with 77\n");
    return 77;
  }
  encore::ConditionalSupport support = encore::QueryConditionalSupport();
  if (!support.supported) {
    std::fprintf(stderr, "device_loop_micro: %s; exiting with 77\n", support.reason.c_str());
    return 77;
  }
  Env env;
  CK(cudaStreamCreateWithFlags(&env.s, cudaStreamNonBlocking));
  OK(env.pool.Prepare(2));
  env.counters = OK(encore::LoopCounters::Create(8));
  env.record = OK(encore::LoopRecord::Create());
  encore::DeviceMemory flags = OK(encore::DeviceMemory::Allocate(sizeof(int) + 8));
  env.left = flags.as<int>();
  env.go = reinterpret_cast<bool*>(flags.as<char>() + sizeof(int));
  encore::PinnedHostMemory pinned = OK(encore::PinnedHostMemory::Allocate(1));
  env.pinned_flag = pinned.as<bool>();
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device_loop_micro on %s: a loop decided on the device (WHILE node) against one launch per step\n",
              prop.name);
  std::string json;
  for (double us : {1.0, 50.0}) RunWork(env, o, us, &json);
  WriteJson("{\"benchmark\": \"device_loop_micro\", \"device\": \"" + std::string(prop.name) + "\", \"runs\": [\n" +
                json + "\n]}\n",
            o.json);
  CK(cudaStreamSynchronize(env.s));
  CK(cudaStreamDestroy(env.s));
  return 0;
}
