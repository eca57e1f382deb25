// SPDX-License-Identifier: Apache-2.0
// What the CUDA driver keeps on the host heap per graph instantiation, with
// no encore code in the loop: each round captures a one-kernel graph (a
// copy in, the kernel, a copy out: the shape of a staged graph), makes 8
// executables of it, launches each, and destroys them all with the graph.
// `--update` instead keeps 8 executables made once and updates them in
// place (cudaGraphExecUpdate) with each round's graph. Prints malloc's bytes
// in use (mallinfo2) and RSS every `--every` rounds; the growth per round
// is the driver's, which bench/soak's bound has to allow for or avoid.
//
//   bench/instantiate_heap [--rounds N] [--every M] [--update]
#include <cuda_runtime.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "encore/tests/test_kernels.h"

namespace {

constexpr int kExecs = 8;
constexpr int64_t kN = 4096;

long RssKiB() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("instantiate_heap: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// The staged shape: copy in, kernel, copy out.
bool Capture(cudaStream_t s, float* in, float* sin, float* sout, float* out, cudaGraph_t* g) {
  if (!Ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin")) return false;
  cudaMemcpyAsync(sin, in, kN * sizeof(float), cudaMemcpyDeviceToDevice, s);
  encore::testing::LaunchAffine(sin, sout, 2.0f, 1.0f, kN, s);
  cudaMemcpyAsync(out, sout, kN * sizeof(float), cudaMemcpyDeviceToDevice, s);
  return Ok(cudaStreamEndCapture(s, g), "end");
}

}  // namespace

int main(int argc, char** argv) {
  long rounds = 1000, every = 100;
  bool update = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--every") && i + 1 < argc) every = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--update")) update = true;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("instantiate_heap: no GPU\n");
    return 77;
  }
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float *in, *sin, *sout, *out;
  for (float** p : {&in, &sin, &sout, &out}) cudaMalloc(p, kN * sizeof(float));
  std::vector<cudaGraphExec_t> kept(kExecs, nullptr);
  size_t first_heap = 0;
  long first_rss = 0;
  std::printf("instantiate_heap: %ld rounds of %d executables (%s)\n", rounds, kExecs,
              update ? "updated in place" : "instantiated and destroyed");
  for (long r = 0; r < rounds; ++r) {
    cudaGraph_t g = nullptr;
    if (!Capture(s, in, sin, sout, out, &g)) return 1;
    for (int k = 0; k < kExecs; ++k) {
      if (update && kept[k] != nullptr) {
        cudaGraphExecUpdateResultInfo info{};
        if (!Ok(cudaGraphExecUpdate(kept[k], g, &info), "update")) return 1;
      } else if (!Ok(cudaGraphInstantiateWithFlags(&kept[k], g, 0), "instantiate")) {
        return 1;
      }
      if (!Ok(cudaGraphLaunch(kept[k], s), "launch")) return 1;
    }
    if (!Ok(cudaStreamSynchronize(s), "sync")) return 1;
    for (int k = 0; k < kExecs && !update; ++k) {
      cudaGraphExecDestroy(kept[k]);
      kept[k] = nullptr;
    }
    cudaGraphDestroy(g);
    if ((r + 1) % every == 0) {
      const size_t heap = mallinfo2().uordblks;
      if (first_heap == 0) {
        first_heap = heap;
        first_rss = RssKiB();
      }
      std::printf("instantiate_heap: after %ld rounds: heap in use %zu B (+%lld since round %ld), RSS %ld KiB "
                  "(+%ld)\n",
                  r + 1, heap, static_cast<long long>(heap) - static_cast<long long>(first_heap), every, RssKiB(),
                  RssKiB() - first_rss);
    }
  }
  const size_t end_heap = mallinfo2().uordblks;
  const long measured = rounds - every;
  std::printf("instantiate_heap: %.1f B of heap per round after round %ld (%s)\n",
              measured > 0 ? (static_cast<double>(end_heap) - static_cast<double>(first_heap)) / measured : 0.0, every,
              update ? "updated in place" : "instantiated and destroyed");
  return 0;
}
