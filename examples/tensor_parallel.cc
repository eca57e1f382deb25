// SPDX-License-Identifier: Apache-2.0
// tensor_parallel: a method that holds an NCCL all-reduce, run by one rank
// per GPU (threads here; processes work the same way), each rank with its
// own Manager. The ranks agree on every capture through NcclConsensus, so a
// capture one rank refuses makes every rank run eagerly instead of leaving
// their collectives out of step. With one GPU it runs one rank on a
// single-rank communicator.
//
//   bazel run //examples:tensor_parallel [-- --refuse-on RANK]
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_util.h"
#include "encore/policy/nccl_consensus.h"
#include "encore/tests/test_kernels.h"

namespace ex = encore::examples;

namespace {

constexpr int64_t kN = 4096;
constexpr int kCalls = 200;

struct RankOutcome {
  int wrong = 0;
  double eager_us = 0, graph_us = 0;
  encore::MethodReport report;
};

// y = all_reduce_sum(x * (rank + 1)) + 1, where every rank's x is the same.
RankOutcome RunRank(ncclComm_t comm, int rank, int ranks, int refuse_on) {
  EX_CUDA(cudaSetDevice(rank));
  RankOutcome out;
  auto consensus = EX_OK(encore::NcclConsensus::Create(comm, std::chrono::seconds(30)));
  encore::ManagerOptions options;
  options.consensus = consensus;
  auto manager = EX_OK(encore::Manager::Create(options));
  auto make = [&](const char* name, bool graphs) {
    encore::MethodSpec spec;
    spec.name = name;
    spec.constants = std::vector<encore::Constant>{};
    encore::MethodFlags flags;
    flags.graphs = graphs;
    spec.flags = flags;
    spec.fn = [comm, rank, refuse_on](encore::Call& call) -> encore::Status {
      if (rank == refuse_on && call.kind() == encore::CallKind::kCapture) {
        return encore::CaptureRefusal("rank " + std::to_string(rank) + " refuses its capture (--refuse-on)");
      }
      float* y = static_cast<float*>(call.output(0).data);
      ENCORE_RETURN_IF_ERROR(encore::CudaStatus(encore::testing::LaunchAffine(static_cast<const float*>(call.input(0).data),
                                                                        y, rank + 1.0f, 0.0f, kN, call.stream()),
                                          "scale"));
      if (ncclAllReduce(y, y, kN, ncclFloat, ncclSum, comm, call.stream()) != ncclSuccess) {
        return encore::InternalError("ncclAllReduce failed");
      }
      return encore::CudaStatus(encore::testing::LaunchAffine(y, y, 1.0f, 1.0f, kN, call.stream()), "bias");
    };
    return EX_OK(manager->Register(std::move(spec)));
  };
  encore::Method* graphed = make("tp_layer", true);
  encore::Method* eager = make("tp_layer_eager", false);

  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *x, *y;
  EX_CUDA(cudaMalloc(&x, kN * sizeof(float)));
  EX_CUDA(cudaMalloc(&y, kN * sizeof(float)));
  std::vector<float> h(kN);
  const float scale_sum = ranks * (ranks + 1) / 2.0f;
  // The first pass warms both up (NCCL's first collectives, the graph's
  // capture); the second pass is timed.
  for (int pass = 0; pass < 2; ++pass)
  for (encore::Method* m : {eager, graphed}) {
    double t0 = ex::NowMicros();
    for (int call = 0; call < kCalls; ++call) {
      for (int64_t i = 0; i < kN; ++i) h[i] = static_cast<float>((call + i) % 97);
      EX_CUDA(cudaMemcpyAsync(x, h.data(), kN * sizeof(float), cudaMemcpyHostToDevice, s));
      encore::TensorRef in = ex::Floats(x, {kN}), o = ex::Floats(y, {kN});
      EX_OK(m->Run({&in, 1}, {&o, 1}, s));
      EX_CUDA(cudaMemcpyAsync(h.data(), y, kN * sizeof(float), cudaMemcpyDeviceToHost, s));
      EX_CUDA(cudaStreamSynchronize(s));
      for (int64_t i = 0; i < kN; ++i) {
        if (h[i] != ((call + i) % 97) * scale_sum + 1.0f) {
          ++out.wrong;
          break;
        }
      }
    }
    if (pass == 1) (m == eager ? out.eager_us : out.graph_us) = (ex::NowMicros() - t0) / kCalls;
  }
  out.report = graphed->Report();
  EX_CUDA(cudaFree(x));
  EX_CUDA(cudaFree(y));
  EX_CUDA(cudaStreamDestroy(s));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = ex::RequireGpu("tensor_parallel")) return rc;
  int refuse_on = -1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--refuse-on") == 0) refuse_on = std::atoi(argv[i + 1]);
  }
  int ranks = 0;
  EX_CUDA(cudaGetDeviceCount(&ranks));
  std::printf("tensor_parallel: %d rank(s), one per GPU%s\n", ranks,
              refuse_on >= 0 ? (", rank " + std::to_string(refuse_on) + " refuses its capture").c_str() : "");
  std::vector<int> devices(ranks);
  for (int r = 0; r < ranks; ++r) devices[r] = r;
  std::vector<ncclComm_t> comms(ranks);
  if (ncclCommInitAll(comms.data(), ranks, devices.data()) != ncclSuccess) {
    std::fprintf(stderr, "FAILED: ncclCommInitAll\n");
    return 1;
  }
  std::vector<RankOutcome> outcomes(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { outcomes[r] = RunRank(comms[r], r, ranks, refuse_on); });
  for (auto& t : threads) t.join();
  for (ncclComm_t c : comms) ncclCommDestroy(c);

  bool ok = true;
  const bool expect_graph = refuse_on < 0 || refuse_on >= ranks;
  for (int r = 0; r < ranks; ++r) {
    const RankOutcome& o = outcomes[r];
    std::printf("rank %d: %d/%d calls equal to the reference; per call (incl. copies and sync) eager %.1f us, "
                "encore %.1f us; phase %s, captures %lld, replays %lld%s%s\n",
                r, 4 * kCalls - o.wrong, 4 * kCalls, o.eager_us, o.graph_us,
                std::string(encore::MethodPhaseName(o.report.phase)).c_str(),
                static_cast<long long>(o.report.captures), static_cast<long long>(o.report.replays),
                o.report.graphs_off_reason.empty() ? "" : "; graphs off: ", o.report.graphs_off_reason.c_str());
    ok &= o.wrong == 0;
    ok &= expect_graph ? o.report.captures == 1 : (o.report.captures == 0 && o.report.phase == encore::MethodPhase::kEager);
  }
  if (!ok) {
    std::fprintf(stderr, "FAILED: a rank computed a wrong value or the ranks did not agree\n");
    return 1;
  }
  std::printf("ok: every rank %s\n", expect_graph ? "replayed its graph" : "ran eagerly, as agreed");
  return 0;
}
