// SPDX-License-Identifier: Apache-2.0
// A sampling CPU profiler to preload into a benchmark on a machine without
// perf (the GPU machine): every CPU_SAMPLER_US microseconds of the process's
// CPU time (default 1000; the kernel rounds it up to its tick, 4 ms on many
// machines) SIGPROF takes the interrupted thread's call stack;
// at exit the stacks go to CPU_SAMPLER_OUT, after /proc/self/maps, for
// tools/cpu_sampler_report.py to name with the unstripped binary. Samples
// start when the environment variable is set and stop at 400,000.
//
//   g++ -O2 -fPIC -shared -o cpu_sampler.so tools/cpu_sampler.cc
//   CPU_SAMPLER_OUT=prof.txt LD_PRELOAD=$PWD/cpu_sampler.so bench/stages_micro --profile 200000
#include <execinfo.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

constexpr int kDepth = 24;
constexpr int kMaxSamples = 400000;

struct Sample {
  int depth;
  void* pcs[kDepth];
};

Sample* g_samples = nullptr;
std::atomic<int> g_next{0};

void OnProf(int) {
  const int i = g_next.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxSamples) return;
  g_samples[i].depth = backtrace(g_samples[i].pcs, kDepth);
}

__attribute__((constructor)) void Start() {
  const char* out = std::getenv("CPU_SAMPLER_OUT");
  if (out == nullptr) return;
  g_samples = static_cast<Sample*>(std::calloc(kMaxSamples, sizeof(Sample)));
  void* warm[4];
  (void)backtrace(warm, 4);  // loads the unwinder now, not inside the handler
  struct sigaction sa {};
  sa.sa_handler = OnProf;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  const char* us_text = std::getenv("CPU_SAMPLER_US");
  const long us = us_text != nullptr ? std::atol(us_text) : 1000;
  itimerval t{};
  t.it_interval.tv_usec = us;
  t.it_value.tv_usec = us;
  setitimer(ITIMER_PROF, &t, nullptr);
}

__attribute__((destructor)) void Stop() {
  const char* out = std::getenv("CPU_SAMPLER_OUT");
  if (out == nullptr || g_samples == nullptr) return;
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  FILE* f = std::fopen(out, "w");
  if (f == nullptr) return;
  {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) std::fprintf(f, "map %s\n", line.c_str());
  }
  const int n = std::min(g_next.load(), kMaxSamples);
  for (int i = 0; i < n; ++i) {
    std::fprintf(f, "stack");
    for (int d = 0; d < g_samples[i].depth; ++d) std::fprintf(f, " %p", g_samples[i].pcs[d]);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
  std::fprintf(stderr, "cpu_sampler: %d samples to %s\n", n, out);
}

}  // namespace
