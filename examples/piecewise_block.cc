// SPDX-License-Identifier: Apache-2.0
// A transformer-style block as a piecewise method (MethodSpec::stages): two
// cuBLAS GEMM pieces, captured as graphs, around an attention stage that
// runs eagerly on every call because its kernel takes per-call metadata
// prepared on the host (the sequence lengths of the batch, different on
// every call), as a serving engine's attention does. Prints how each call
// ran and the report, and checks every output bit-equal to the same block
// run eagerly.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"

namespace {

using encore::examples::Expect;

constexpr int kTokens = 64;  // rows of the batch, split into sequences
constexpr int kDim = 256;
constexpr int kSequences = 4;

struct Block {
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  float* w_in = nullptr;   // [kDim, kDim]
  float* w_out = nullptr;  // [kDim, kDim]
  float* h = nullptr;      // [kTokens, kDim]: the first GEMM's result
  float* a = nullptr;      // [kTokens, kDim]: attention's result
  int* lengths = nullptr;  // per-call metadata on the device
  std::vector<int> host_lengths = std::vector<int>(kSequences, kTokens / kSequences);
};

constexpr size_t kWorkspaceBytes = 4 << 20;

encore::Status Blas(cublasStatus_t s, const char* what) {
  return s == CUBLAS_STATUS_SUCCESS ? encore::OkStatus() : encore::InternalError(std::string(what) + " failed");
}

// out[tokens, kDim] = in[tokens, kDim] x w[kDim, kDim] (row-major), on the call's stream.
encore::Status Gemm(Block& b, cudaStream_t s, const float* in, const float* w, float* out) {
  ENCORE_RETURN_IF_ERROR(Blas(cublasSetStream(b.blas, s), "cublasSetStream"));
  // cublasSetStream drops the workspace: give it back, allocated outside any capture.
  ENCORE_RETURN_IF_ERROR(Blas(cublasSetWorkspace(b.blas, b.workspace, kWorkspaceBytes), "cublasSetWorkspace"));
  const float one = 1.0f, zero = 0.0f;
  return Blas(cublasSgemm(b.blas, CUBLAS_OP_N, CUBLAS_OP_N, kDim, kTokens, kDim, &one, w, kDim, in, kDim, &zero, out,
                          kDim),
              "cublasSgemm");
}

std::vector<encore::Stage> Stages(Block& b) {
  return {
      {"project_in", [&b](encore::Call& c) {
         return Gemm(b, c.stream(), static_cast<const float*>(c.input(0).data), b.w_in, b.h);
       }},
      {"attention",
       [&b](encore::Call& c) -> encore::Status {
         // Host metadata, new on every call: it cannot be baked into a graph.
         EX_CUDA(cudaMemcpyAsync(b.lengths, b.host_lengths.data(), kSequences * sizeof(int), cudaMemcpyHostToDevice,
                                 c.stream()));
         cudaError_t e = encore::examples::LaunchRaggedMean(b.h, b.lengths, kSequences, b.a, kTokens, kDim, c.stream());
         return e == cudaSuccess ? encore::OkStatus() : encore::InternalError(cudaGetErrorName(e));
       },
       /*eager=*/true},
      {"project_out", [&b](encore::Call& c) {
         return Gemm(b, c.stream(), b.a, b.w_out, static_cast<float*>(c.output(0).data));
       }},
  };
}

encore::Method* Register(encore::Manager& mgr, Block& b, const std::string& name, bool graphs) {
  encore::MethodSpec spec;
  spec.name = name;
  spec.stages = Stages(b);
  spec.constants = std::vector<encore::Constant>{{"w_in", b.w_in, kDim * kDim * 4, /*read_only=*/true},
                                                 {"w_out", b.w_out, kDim * kDim * 4, true},
                                                 {"h", b.h, kTokens * kDim * 4},
                                                 {"a", b.a, kTokens * kDim * 4},
                                                 {"lengths", b.lengths, kSequences * 4}};
  encore::MethodFlags f;
  f.graphs = graphs;
  spec.flags = f;
  auto m = mgr.Register(std::move(spec));
  EX_OK(m.status());
  return *m;
}

void Init(Block& b) {
  Expect(cublasCreate(&b.blas) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  EX_CUDA(cudaMalloc(&b.workspace, kWorkspaceBytes));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  std::vector<float> w(kDim * kDim);
  for (float** p : {&b.w_in, &b.w_out}) {
    for (float& v : w) v = u(rng);
    EX_CUDA(cudaMalloc(p, w.size() * 4));
    EX_CUDA(cudaMemcpy(*p, w.data(), w.size() * 4, cudaMemcpyHostToDevice));
  }
  EX_CUDA(cudaMalloc(&b.h, kTokens * kDim * 4));
  EX_CUDA(cudaMalloc(&b.a, kTokens * kDim * 4));
  EX_CUDA(cudaMalloc(&b.lengths, kSequences * 4));
}

// Lengths that sum to kTokens, different on every call.
void NewLengths(Block& b, std::mt19937& rng) {
  int left = kTokens;
  for (int i = 0; i + 1 < kSequences; ++i) {
    b.host_lengths[i] = 1 + static_cast<int>(rng() % (left - (kSequences - 1 - i)));
    left -= b.host_lengths[i];
  }
  b.host_lengths[kSequences - 1] = left;
}

}  // namespace

int main() {
  if (int rc = encore::examples::RequireGpu("piecewise_block")) return rc;
  Block b;
  Init(b);
  auto mgr = *encore::Manager::Create();
  encore::Method* block = Register(*mgr, b, "block", true);
  encore::Method* eager = Register(*mgr, b, "block_eager", false);
  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *x, *y, *y_eager;
  EX_CUDA(cudaMalloc(&x, kTokens * kDim * 4));
  EX_CUDA(cudaMalloc(&y, kTokens * kDim * 4));
  EX_CUDA(cudaMalloc(&y_eager, kTokens * kDim * 4));
  std::mt19937 rng(11);
  std::vector<float> host_x(kTokens * kDim), got(host_x.size()), want(host_x.size());
  for (int call = 1; call <= 12; ++call) {
    for (float& v : host_x) v = static_cast<float>(rng() % 1000) / 500.0f - 1.0f;
    EX_CUDA(cudaMemcpy(x, host_x.data(), host_x.size() * 4, cudaMemcpyHostToDevice));
    NewLengths(b, rng);
    encore::TensorRef in = encore::examples::Floats(x, {kTokens, kDim});
    encore::TensorRef out = encore::examples::Floats(y, {kTokens, kDim});
    encore::TensorRef out_eager = encore::examples::Floats(y_eager, {kTokens, kDim});
    EX_OK(eager->Run({&in, 1}, {&out_eager, 1}, s));
    EX_OK(block->Run({&in, 1}, {&out, 1}, s));
    EX_CUDA(cudaStreamSynchronize(s));
    EX_CUDA(cudaMemcpy(got.data(), y, got.size() * 4, cudaMemcpyDeviceToHost));
    EX_CUDA(cudaMemcpy(want.data(), y_eager, want.size() * 4, cudaMemcpyDeviceToHost));
    const encore::MethodReport r = block->Report();
    std::printf("call %2d: lengths %2d %2d %2d %2d, phase %-7s, %s\n", call, b.host_lengths[0], b.host_lengths[1],
                b.host_lengths[2], b.host_lengths[3], std::string(encore::MethodPhaseName(r.phase)).c_str(),
                got == want ? "bit-equal to eager" : "DIFFERS from eager");
    Expect(got == want, "call " + std::to_string(call) + " equals the eager block");
  }
  encore::examples::PrintReport(*block);
  const encore::MethodReport r = block->Report();
  Expect(r.pieces.size() == 2 && r.pieces[0].graphed && r.pieces[1].graphed, "both GEMM pieces are graphs");
  Expect(r.phase == encore::MethodPhase::kReplay, "the block replays");
  std::printf("piecewise_block: OK\n");
  return 0;
}
