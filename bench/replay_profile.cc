// SPDX-License-Identifier: Apache-2.0
// replay_profile [K] [pairs] [bare|bare_record]: where a replay's host time goes, for machines
// without a profiler. Replays a K-kernel direct-bound method over `pairs`
// rotating buffer pairs for about 3 seconds under a SIGPROF sampler (every
// 50 µs of wall time, aimed at the calling thread) that keeps the
// interrupted instruction's address, then
// prints the mapped objects and the addresses with their sample counts.
// Symbolize the encore ones with `addr2line -f -C -e <unstripped binary>`
// after subtracting the binary's load base (printed).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <ucontext.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "encore/bench/micro_kernels.h"
#include "encore/encore.h"
#include "encore/examples/example_util.h"

namespace {

constexpr int kN = 256;
constexpr size_t kMaxSamples = 1 << 20;
uintptr_t g_samples[kMaxSamples];
std::atomic<size_t> g_count{0};

void OnProf(int, siginfo_t*, void* uc) {
  const size_t i = g_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) g_samples[i] = static_cast<uintptr_t>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]);
}

cudaError_t Work(const float* in, float* out, int k, cudaStream_t s) {
  return encore::bench::LaunchAddOneChain(in, out, kN, k, s);
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = encore::examples::RequireGpu("replay_profile")) return rc;
  const int k = argc > 1 ? std::atoi(argv[1]) : 1;
  const int pairs = argc > 2 ? std::atoi(argv[2]) : 2;
  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<encore::TensorRef> ti, to;
  for (int p = 0; p < pairs; ++p) {
    float *in, *out;
    EX_CUDA(cudaMalloc(&in, kN * 4));
    EX_CUDA(cudaMalloc(&out, kN * 4));
    EX_CUDA(cudaMemset(in, 0, kN * 4));
    ti.push_back(encore::TensorRef{in, encore::DType::kFloat32, {kN}, {}});
    to.push_back(encore::TensorRef{out, encore::DType::kFloat32, {kN}, {}});
  }
  encore::ManagerOptions mo;
  mo.logger = std::make_shared<spdlog::logger>("quiet");
  auto mgr = *encore::Manager::Create(mo);
  encore::MethodSpec spec;
  spec.name = "profiled";
  spec.constants = std::vector<encore::Constant>{};
  spec.fn = [k](encore::Call& c) -> encore::Status {
    return encore::CudaStatus(
        Work(static_cast<const float*>(c.input(0).data), static_cast<float*>(c.output(0).data), k, c.stream()),
        "work");
  };
  encore::Method* m = *mgr->Register(spec);
  // bare: the same work as one hand-captured executable per pair;
  // bare_record: each ending with an event record node, as encore's graphs do.
  const std::string mode = argc > 3 ? argv[3] : "";
  const bool bare = mode == "bare" || mode == "bare_record";
  cudaEvent_t done;
  EX_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  std::vector<cudaGraphExec_t> execs;
  for (int p = 0; bare && p < pairs; ++p) {
    cudaGraph_t g;
    EX_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    EX_CUDA(Work(static_cast<const float*>(ti[p].data), static_cast<float*>(to[p].data), k, s));
    if (mode == "bare_record") EX_CUDA(cudaEventRecordWithFlags(done, s, cudaEventRecordExternal));
    EX_CUDA(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e;
    EX_CUDA(cudaGraphInstantiate(&e, g, 0));
    execs.push_back(e);
  }
  auto run = [&](int i) {
    if (bare) {
      EX_CUDA(cudaGraphLaunch(execs[i % pairs], s));
    } else if (!m->Run({&ti[i % pairs], 1}, {&to[i % pairs], 1}, s).ok()) {
      std::exit(1);
    }
  };
  for (int i = 0; i < 10000; ++i) run(i);
  EX_CUDA(cudaStreamSynchronize(s));

  struct sigaction sa {};
  sa.sa_sigaction = OnProf;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  // A high-resolution wall-clock timer aimed at this thread (the itimer's
  // CPU clock ticks only at the kernel's HZ).
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) return 1;
  itimerspec its{{0, 50000}, {0, 50000}};
  timer_settime(timer, 0, &its, nullptr);
  const double t0 = encore::examples::NowMicros();
  int calls = 0;
  while (encore::examples::NowMicros() - t0 < 3e6) {
    for (int i = 0; i < 1000; ++i) run(calls++);
    EX_CUDA(cudaStreamSynchronize(s));
  }
  timer_delete(timer);
  const double us = encore::examples::NowMicros() - t0;
  std::printf("calls %d, %.3f us per call (with syncs every 1000), samples %zu, binding %s\n", calls, us / calls,
              g_count.load(), std::string(encore::BindingName(m->Report().binding)).c_str());
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(" r-xp ") != std::string::npos) std::printf("map %s\n", line.c_str());
  }
  std::map<uintptr_t, int> hist;
  const size_t n = std::min(g_count.load(), kMaxSamples);
  for (size_t i = 0; i < n; ++i) ++hist[g_samples[i]];
  std::map<std::string, int> by_symbol;  // shared objects' exported symbols
  for (const auto& [pc, c] : hist) {
    std::printf("pc %lx %d\n", static_cast<unsigned long>(pc), c);
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(pc), &info) != 0 && info.dli_sname != nullptr) {
      by_symbol[std::string(info.dli_fname ? info.dli_fname : "?") + " " + info.dli_sname] += c;
    }
  }
  for (const auto& [name, c] : by_symbol) std::printf("sym %d %s\n", c, name.c_str());
  return 0;
}
