// SPDX-License-Identifier: Apache-2.0
// replay_micro [K]: where a replay's time goes. K kernels of work (256 floats,
// out = in + 1, then out += 1) behind staging nodes, with 0, 1 or 2 kernel-parameter
// rewrites per launch, against the bare graph and encore's Method::Run.
// Prints CPU (submit) and end-to-end microseconds per call, median of 7.
#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/bench/micro_kernels.h"
#include "encore/core/internal/cuda_api.h"
#include "encore/encore.h"
#include "encore/graph/binding/internal/staging.h"

namespace {

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

constexpr int kN = 256;
constexpr int kBytes = kN * 4;
constexpr int kCalls = 2000;
int g_k = 1;  // kernels of work per call: argv[1]

// out = in + 1, then out += 1 for the other g_k - 1 kernels.
cudaError_t Work(const float* in, float* out, cudaStream_t s) {
  return encore::bench::LaunchAddOneChain(in, out, kN, g_k, s);
}

void Measure(const char* name, cudaStream_t s, const std::function<void(int)>& call) {
  const encore::bench::Timing t = encore::bench::MeasureInterleaved(s, kCalls, 7, 50, {{name, call}}).at(name);
  std::printf("%-48s cpu %6.2f us   e2e %6.2f us\n", name, t.cpu_us, t.e2e_us);
}

cudaGraphNode_t LastNode(cudaStream_t s) {
  cudaStreamCaptureStatus st;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  CK(encore_cudaStreamGetCaptureInfo(s, &st, &deps, &n));  // CUDA 12 and 13 differ here
  return deps[0];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_k = std::atoi(argv[1]);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "replay_micro: no CUDA device visible\n");
    return 77;
  }
  using namespace encore;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *in[4], *out[4], *sin, *sout;
  for (int i = 0; i < 4; ++i) {
    CK(cudaMalloc(&in[i], kBytes));
    CK(cudaMalloc(&out[i], kBytes));
    CK(cudaMemset(in[i], 0, kBytes));
  }
  CK(cudaMalloc(&sin, kBytes));
  CK(cudaMalloc(&sout, kBytes));
  CK(cudaDeviceSynchronize());

  // Bare graph.
  cudaGraph_t g;
  cudaGraphExec_t raw;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(Work(sin, sout, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&raw, g, 0));
  Measure("raw graph launch", s, [&](int) { CK(cudaGraphLaunch(raw, s)); });

  // encore's staging kernel (large parameter struct) around the work.
  StagingParams pin{}, pout{};
  pin.count = pout.count = 1;
  pin.copies[0] = {in[0], sin, kBytes};
  pout.copies[0] = {sout, out[0], kBytes};
  cudaGraphNode_t nin, nout;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(LaunchStaging(pin, kBytes, s));
  nin = LastNode(s);
  CK(Work(sin, sout, s));
  CK(LaunchStaging(pout, kBytes, s));
  nout = LastNode(s);
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t staged;
  CK(cudaGraphInstantiate(&staged, g, 0));
  cudaKernelNodeParams kin{}, kout{};
  CK(cudaGraphKernelNodeGetParams(nin, &kin));
  CK(cudaGraphKernelNodeGetParams(nout, &kout));
  Measure("staged (312 B params), no rewrite", s, [&](int) { CK(cudaGraphLaunch(staged, s)); });
  Measure("staged (312 B params), 1 rewrite", s, [&](int i) {
    pin.copies[0].src = in[i % 4];
    void* a[] = {&pin};
    kin.kernelParams = a;
    kin.extra = nullptr;
    CK(cudaGraphExecKernelNodeSetParams(staged, nin, &kin));
    CK(cudaGraphLaunch(staged, s));
  });
  Measure("staged (312 B params), 2 rewrites", s, [&](int i) {
    pin.copies[0].src = in[i % 4];
    pout.copies[0].dst = out[i % 4];
    void* a[] = {&pin};
    void* b[] = {&pout};
    kin.kernelParams = a;
    kout.kernelParams = b;
    kin.extra = kout.extra = nullptr;
    CK(cudaGraphExecKernelNodeSetParams(staged, nin, &kin));
    CK(cudaGraphExecKernelNodeSetParams(staged, nout, &kout));
    CK(cudaGraphLaunch(staged, s));
  });

  // What encore adds to the bare staged graph, one piece at a time: the
  // check sequence bump in the head, the output-address table the tail reads,
  // and the completion event-record node.
  {
    unsigned long long* seq;
    void** table;
    CK(cudaMalloc(&seq, 8));
    CK(cudaMemset(seq, 0, 8));
    CK(cudaMalloc(&table, 8));
    cudaEvent_t done;
    CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    auto build = [&](bool with_seq, bool with_table, bool with_record) {
      StagingParams h{}, t{};
      h.count = t.count = 1;
      h.copies[0] = {in[0], sin, kBytes};
      t.copies[0] = {sout, out[0], kBytes};
      if (with_seq) h.sequence = seq;
      if (with_table) {
        h.table = t.table = table;
        h.publish_count = 1;
        h.publish[0] = out[0];
        t.is_tail = 1;
      }
      cudaGraph_t gg;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      CK(LaunchStaging(h, kBytes, s));
      CK(Work(sin, sout, s));
      CK(LaunchStaging(t, kBytes, s));
      cudaGraphNode_t last = LastNode(s);
      CK(cudaStreamEndCapture(s, &gg));
      if (with_record) {
        cudaGraphNode_t rec;
        CK(cudaGraphAddEventRecordNode(&rec, gg, &last, 1, done));
      }
      cudaGraphExec_t e;
      CK(cudaGraphInstantiate(&e, gg, 0));
      return e;
    };
    cudaGraphExec_t e_seq = build(true, false, false);
    cudaGraphExec_t e_tab = build(false, true, false);
    cudaGraphExec_t e_rec = build(false, false, true);
    cudaGraphExec_t e_all = build(true, true, true);
    Measure("staged + sequence bump", s, [&](int) { CK(cudaGraphLaunch(e_seq, s)); });
    Measure("staged + output-address table", s, [&](int) { CK(cudaGraphLaunch(e_tab, s)); });
    Measure("staged + completion record node", s, [&](int) { CK(cudaGraphLaunch(e_rec, s)); });
    Measure("staged + all three (encore's graph)", s, [&](int) { CK(cudaGraphLaunch(e_all, s)); });
  }

  // Small parameters (24 bytes).
  cudaGraphNode_t sin_node, sout_node;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(bench::LaunchSmallCopy(in[0], sin, kBytes, s));
  sin_node = LastNode(s);
  CK(Work(sin, sout, s));
  CK(bench::LaunchSmallCopy(sout, out[0], kBytes, s));
  sout_node = LastNode(s);
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t small;
  CK(cudaGraphInstantiate(&small, g, 0));
  cudaKernelNodeParams ksin{}, ksout{};
  CK(cudaGraphKernelNodeGetParams(sin_node, &ksin));
  CK(cudaGraphKernelNodeGetParams(sout_node, &ksout));
  Measure("small-param staged, no rewrite", s, [&](int) { CK(cudaGraphLaunch(small, s)); });
  Measure("small-param staged, 1 rewrite", s, [&](int i) {
    const void* src = in[i % 4];
    void* dst = sin;
    uint64_t bytes = kBytes;
    void* a[] = {&src, &dst, &bytes};
    ksin.kernelParams = a;
    ksin.extra = nullptr;
    CK(cudaGraphExecKernelNodeSetParams(small, sin_node, &ksin));
    CK(cudaGraphLaunch(small, s));
  });
  Measure("small-param staged, 2 rewrites", s, [&](int i) {
    const void* src = in[i % 4];
    void* dst = sin;
    const void* src2 = sout;
    void* dst2 = out[i % 4];
    uint64_t bytes = kBytes;
    void* a[] = {&src, &dst, &bytes};
    void* b[] = {&src2, &dst2, &bytes};
    ksin.kernelParams = a;
    ksout.kernelParams = b;
    ksin.extra = ksout.extra = nullptr;
    CK(cudaGraphExecKernelNodeSetParams(small, sin_node, &ksin));
    CK(cudaGraphExecKernelNodeSetParams(small, sout_node, &ksout));
    CK(cudaGraphLaunch(small, s));
  });

  // encore.
  ManagerOptions mo;
  mo.logger = std::make_shared<spdlog::logger>("quiet");
  auto mgr = *Manager::Create(mo);
  MethodSpec spec;
  spec.name = "add_one";
  spec.constants = std::vector<Constant>{};
  spec.fn = [](Call& c) -> Status {
    cudaError_t e = Work(static_cast<const float*>(c.input(0).data), static_cast<float*>(c.output(0).data),
                         c.stream());
    return e == cudaSuccess ? OkStatus() : InternalError(cudaGetErrorName(e));
  };
  Method* m = *mgr->Register(spec);
  std::vector<TensorRef> ti, to;
  for (int i = 0; i < 4; ++i) {
    ti.push_back(TensorRef{in[i], DType::kFloat32, {kN}, {}});
    to.push_back(TensorRef{out[i], DType::kFloat32, {kN}, {}});
  }
  Measure("encore Run, same addresses", s, [&](int) {
    if (!m->Run({&ti[0], 1}, {&to[0], 1}, s).ok()) std::exit(1);
  });
  Measure("encore Run, 4 rotating addresses", s, [&](int i) {
    if (!m->Run({&ti[i % 4], 1}, {&to[i % 4], 1}, s).ok()) std::exit(1);
  });
  Measure("encore Run, input moves, output fixed", s, [&](int i) {
    if (!m->Run({&ti[i % 4], 1}, {&to[0], 1}, s).ok()) std::exit(1);
  });
  std::printf("K=%d, replays: %lld\n", g_k, static_cast<long long>(m->Report().replays));
  return 0;
}
