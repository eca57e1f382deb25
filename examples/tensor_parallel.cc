// SPDX-License-Identifier: Apache-2.0
// tensor_parallel: a method that holds an NCCL all-reduce, run by one rank
// per GPU (threads here; processes work the same way), each rank with its
// own Manager. The ranks agree on every capture through NcclConsensus, so a
// capture one rank refuses makes every rank run eagerly instead of leaving
// their collectives out of step. With one GPU it runs one rank on a
// single-rank communicator.
//
// Verification (--verify N, or ENCORE_METHOD_FLAGS=tp_layer:verify=N)
// checks the capture launch and the next N replays against eager runs on
// every rank; --perturb-on RANK makes that rank's captured graph add 1.5
// instead of 1, so its check fails, and every rank must then run eagerly
// with right results (the mismatch is voted on).
//
//   bazel run //examples:tensor_parallel [-- --refuse-on RANK] [--verify N] [--perturb-on RANK]
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
#include "encore/interop/nccl/nccl_consensus.h"
#include "encore/tests/test_kernels.h"

namespace ex = encore::examples;

namespace {

constexpr int64_t kN = 4096;
constexpr int kCalls = 200;

struct Options {
  int refuse_on = -1;   // this rank refuses its capture
  int perturb_on = -1;  // this rank's graph computes a wrong bias
  int verify = 0;       // MethodFlags::verify of tp_layer
};

struct RankOutcome {
  int wrong = 0;
  double eager_us = 0, graph_us = 0;
  encore::MethodReport report;
};

// y = all_reduce_sum(x * (rank + 1)) + 1, where every rank's x is the same.
RankOutcome RunRank(ncclComm_t comm, int rank, int ranks, const Options& opt) {
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
    if (graphs) flags.verify = opt.verify;
    spec.flags = flags;
    spec.fn = [comm, rank, opt](encore::Call& call) -> encore::Status {
      if (rank == opt.refuse_on && call.kind() == encore::CallKind::kCapture) {
        return encore::CaptureRefusal("rank " + std::to_string(rank) + " refuses its capture (--refuse-on)");
      }
      float* y = static_cast<float*>(call.output(0).data);
      ENCORE_RETURN_IF_ERROR(encore::CudaStatus(encore::testing::LaunchAffine(static_cast<const float*>(call.input(0).data),
                                                                        y, rank + 1.0f, 0.0f, kN, call.stream()),
                                          "scale"));
      if (ncclAllReduce(y, y, kN, ncclFloat, ncclSum, comm, call.stream()) != ncclSuccess) {
        return encore::InternalError("ncclAllReduce failed");
      }
      // A wrong graph on one rank, for verification to catch.
      const float bias = rank == opt.perturb_on && call.kind() == encore::CallKind::kCapture ? 1.5f : 1.0f;
      return encore::CudaStatus(encore::testing::LaunchAffine(y, y, 1.0f, bias, kN, call.stream()), "bias");
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
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (has_value && std::strcmp(argv[i], "--refuse-on") == 0) {
      opt.refuse_on = std::atoi(argv[++i]);
    } else if (has_value && std::strcmp(argv[i], "--perturb-on") == 0) {
      opt.perturb_on = std::atoi(argv[++i]);
    } else if (has_value && std::strcmp(argv[i], "--verify") == 0) {
      opt.verify = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: tensor_parallel [--refuse-on RANK] [--verify N] [--perturb-on RANK]\n");
      return 2;
    }
  }
  int ranks = 0;
  EX_CUDA(cudaGetDeviceCount(&ranks));
  const char* env_flags = std::getenv("ENCORE_METHOD_FLAGS");
  std::printf("tensor_parallel: %d rank(s), one per GPU%s%s; --verify %d, ENCORE_METHOD_FLAGS='%s'\n", ranks,
              opt.refuse_on >= 0 ? (", rank " + std::to_string(opt.refuse_on) + " refuses its capture").c_str() : "",
              opt.perturb_on >= 0 ? (", rank " + std::to_string(opt.perturb_on) + "'s graph adds 1.5").c_str() : "",
              opt.verify, env_flags ? env_flags : "");
  std::vector<int> devices(ranks);
  for (int r = 0; r < ranks; ++r) devices[r] = r;
  std::vector<ncclComm_t> comms(ranks);
  if (ncclCommInitAll(comms.data(), ranks, devices.data()) != ncclSuccess) {
    std::fprintf(stderr, "FAILED: ncclCommInitAll\n");
    return 1;
  }
  std::vector<RankOutcome> outcomes(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { outcomes[r] = RunRank(comms[r], r, ranks, opt); });
  for (auto& t : threads) t.join();
  for (ncclComm_t c : comms) ncclCommDestroy(c);

  const bool refused = opt.refuse_on >= 0 && opt.refuse_on < ranks;
  const bool perturbed = opt.perturb_on >= 0 && opt.perturb_on < ranks;
  const bool expect_graph = !refused && !perturbed;
  bool ok = true;
  for (int r = 0; r < ranks; ++r) {
    const RankOutcome& o = outcomes[r];
    const encore::MethodReport& rep = o.report;
    std::printf("rank %d: %d/%d calls equal to the reference; per call (incl. copies and sync) eager %.1f us, "
                "encore %.1f us; phase %s, captures %lld, replays %lld, verify=%d: verified %lld, failed %lld%s%s\n",
                r, 4 * kCalls - o.wrong, 4 * kCalls, o.eager_us, o.graph_us,
                std::string(encore::MethodPhaseName(rep.phase)).c_str(), static_cast<long long>(rep.captures),
                static_cast<long long>(rep.replays), rep.flags.verify, static_cast<long long>(rep.verified_launches),
                static_cast<long long>(rep.verify_failures), rep.graphs_off_reason.empty() ? "" : "; graphs off: ",
                rep.graphs_off_reason.c_str());
    ok &= o.wrong == 0;
    // The capture launch and the next `verify` launches are checked.
    const int64_t to_verify = rep.flags.verify > 0 ? rep.flags.verify + 1 : 0;
    if (perturbed && to_verify == 0) {
      std::fprintf(stderr, "FAILED: --perturb-on needs verification (--verify N or ENCORE_METHOD_FLAGS=tp_layer:verify=N)\n");
      return 2;
    }
    if (expect_graph) {
      ok &= rep.captures == 1 && rep.phase == encore::MethodPhase::kReplay;
      ok &= rep.verified_launches == to_verify && rep.verify_failures == 0;
    } else if (perturbed) {
      // Captured, then the first launch's check failed on one rank and its
      // vote turned graphs off on all.
      ok &= rep.captures == 1 && rep.phase == encore::MethodPhase::kEager && rep.replays == 0;
      ok &= rep.verified_launches == 1 && rep.verify_failures == (r == opt.perturb_on ? 1 : 0);
      ok &= rep.graphs_off_reason.rfind("verify: ", 0) == 0;
    } else {
      ok &= rep.captures == 0 && rep.phase == encore::MethodPhase::kEager;
    }
  }
  if (!ok) {
    std::fprintf(stderr, "FAILED: a rank computed a wrong value or the ranks did not agree\n");
    return 1;
  }
  std::printf("ok: every rank %s\n", expect_graph ? "replayed its graph"
                                     : perturbed  ? "ran eagerly after one rank's check failed, with right results"
                                                  : "ran eagerly, as agreed");
  return 0;
}
