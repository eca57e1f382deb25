// SPDX-License-Identifier: Apache-2.0
// Loops decided on the device (Call::While), one Run per loop:
//  1. decode: a toy decoder generates tokens until an end token or a length
//     limit. "per sequence" is one Run whose While loop runs the steps in
//     the graph; "per token" is one Run per token, the host reading the
//     device's "more" flag after each (a sync per token), as a loop without
//     While must. Both make the same tokens; tokens per second of each.
//  2. conjugate gradients: iterate until the residual is below a tolerance,
//     one Run per solve, against one Run per iteration with a host read.
// Then a runaway: a bound below what the solve needs stops the loop and
// the next Run says so. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"

namespace {

using encore::examples::Expect;
namespace ex = encore::examples;

double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

encore::Status Ok(cudaError_t e) {
  return e == cudaSuccess ? encore::OkStatus() : encore::InternalError(cudaGetErrorName(e));
}

template <class T>
T* Alloc(size_t n) {
  T* p = nullptr;
  EX_CUDA(cudaMalloc(&p, n * sizeof(T)));
  return p;
}

template <class T>
std::vector<T> Download(const T* p, size_t n) {
  std::vector<T> v(n);
  EX_CUDA(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

encore::Method* Register(encore::Manager& mgr, const std::string& name, encore::MethodFn fn,
                         std::vector<encore::Constant> constants) {
  encore::MethodSpec spec;
  spec.name = name;
  spec.fn = std::move(fn);
  spec.constants = std::move(constants);
  auto m = mgr.Register(std::move(spec));
  EX_OK(m.status());
  return *m;
}

// ---- decode ----------------------------------------------------------------

constexpr int kVocab = 128, kDim = 64, kLimit = 96, kEnd = 0;

struct Decoder {
  float* emb = Alloc<float>(kVocab * kDim);
  int* token = Alloc<int>(1);
  int* pos = Alloc<int>(1);
  bool* more = Alloc<bool>(1);
  std::vector<encore::Constant> Constants() const {
    return {{"emb", emb, kVocab * kDim * sizeof(float), /*read_only=*/true},
            {"token", token, sizeof(int)},
            {"pos", pos, sizeof(int)},
            {"more", more, sizeof(bool)}};
  }
  encore::Status Next(encore::Call& c) const {
    return Ok(ex::LaunchDecodeNext(emb, kVocab, kDim, static_cast<const int*>(c.input(0).data), token, pos, more,
                                   static_cast<int*>(c.output(0).data), kEnd, kLimit, c.stream()));
  }
};

// Input: the prompt token (int32 [1]); output: tokens (int32 [kLimit]).
encore::MethodFn WholeSequence(const Decoder& d) {
  return [&d](encore::Call& c) -> encore::Status {
    ENCORE_RETURN_IF_ERROR(
        Ok(ex::LaunchDecodeStart(static_cast<const int*>(c.input(0).data), d.token, d.pos, d.more, kLimit, c.stream())));
    return c.While(d.more, [&d](encore::Call& body) { return d.Next(body); }, kLimit + 1);
  };
}

void RunDecode(encore::Manager& mgr, cudaStream_t s) {
  Decoder d;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 0.125f);
  std::vector<float> emb(kVocab * kDim);
  for (float& v : emb) v = g(rng);
  EX_CUDA(cudaMemcpy(d.emb, emb.data(), emb.size() * 4, cudaMemcpyHostToDevice));
  encore::Method* seq = Register(mgr, "decode_sequence", WholeSequence(d), d.Constants());
  encore::Method* start = Register(mgr, "decode_start", [&d](encore::Call& c) {
    return Ok(ex::LaunchDecodeStart(static_cast<const int*>(c.input(0).data), d.token, d.pos, d.more, kLimit,
                                    c.stream()));
  }, d.Constants());
  encore::Method* step = Register(mgr, "decode_step", [&d](encore::Call& c) { return d.Next(c); }, d.Constants());
  int* prompt = Alloc<int>(1);
  int* out_seq = Alloc<int>(kLimit);
  int* out_tok = Alloc<int>(kLimit);
  encore::TensorRef in{prompt, encore::DType::kInt32, {1}, {}};
  encore::TensorRef o_seq{out_seq, encore::DType::kInt32, {kLimit}, {}}, o_tok{out_tok, encore::DType::kInt32, {kLimit}, {}};
  bool* more_host = nullptr;
  EX_CUDA(cudaMallocHost(&more_host, 1));
  double us_seq = 0, us_tok = 0;
  long long tokens = 0, syncs_tok = 0;
  const int kSequences = ex::Rounds(40, 8);
  for (int i = 0; i < kSequences; ++i) {
    const int p = 1 + i % (kVocab - 1);
    EX_CUDA(cudaMemcpy(prompt, &p, sizeof(int), cudaMemcpyHostToDevice));
    double t0 = NowUs();
    EX_OK(seq->Run({&in, 1}, {&o_seq, 1}, s));
    EX_CUDA(cudaStreamSynchronize(s));
    if (i >= 5) us_seq += NowUs() - t0;  // calls 1-5: warmups and the capture
    const int len = Download(d.pos, 1)[0];
    t0 = NowUs();
    long long syncs = 0;
    EX_OK(start->Run({&in, 1}, {&o_tok, 1}, s));
    for (*more_host = true; *more_host; ++syncs) {
      EX_OK(step->Run({&in, 1}, {&o_tok, 1}, s));
      EX_CUDA(cudaMemcpyAsync(more_host, d.more, 1, cudaMemcpyDeviceToHost, s));
      EX_CUDA(cudaStreamSynchronize(s));
    }
    if (i >= 5) us_tok += NowUs() - t0, tokens += len, syncs_tok += syncs;
    const std::vector<int> a = Download(out_seq, len), b = Download(out_tok, len);
    Expect(a == b && Download(d.pos, 1)[0] == len, "sequence " + std::to_string(i) + ": the same tokens both ways");
    if (i < 3) {
      std::printf("  prompt %3d: %2d tokens%s:", p, len, a.back() == kEnd ? " (end token)" : " (limit)");
      for (int k = 0; k < std::min(len, 12); ++k) std::printf(" %d", a[k]);
      std::printf("%s\n", len > 12 ? " ..." : "");
    }
  }
  std::printf("decode: %lld tokens in %d sequences; one Run per sequence %.0f tokens/s (0 host syncs per token), "
              "one Run per token %.0f tokens/s (%.1f syncs per token): %.1fx\n",
              tokens, kSequences - 5, tokens / us_seq * 1e6, tokens / us_tok * 1e6,
              static_cast<double>(syncs_tok) / tokens, us_tok / us_seq);
  const encore::MethodReport r = seq->Report();
  Expect(r.phase == encore::MethodPhase::kReplay && r.replays >= kSequences - 5, "decode_sequence replays its graph");
  ex::PrintReport(*seq);
  EX_CUDA(cudaFreeHost(more_host));
}

// ---- conjugate gradients -----------------------------------------------------

constexpr int kN = 256;
constexpr float kTol = 1e-4f;

struct Cg {
  float* a = Alloc<float>(kN * kN);
  float* r = Alloc<float>(kN);
  float* p = Alloc<float>(kN);
  float* rs = Alloc<float>(1);
  bool* more = Alloc<bool>(1);
  int* iterations = Alloc<int>(1);
  // x of the one-Run-per-iteration variant: state a call reads and updates
  // in place, so a constant (an output is only written; a graph whose
  // output is staged would read its own copy, not the last call's x).
  float* x = Alloc<float>(kN);
  std::vector<encore::Constant> Constants() const {
    return {{"A", a, kN * kN * sizeof(float), /*read_only=*/true}, {"r", r, kN * sizeof(float)},
            {"p", p, kN * sizeof(float)}, {"rs", rs, sizeof(float)}, {"more", more, sizeof(bool)},
            {"iterations", iterations, sizeof(int)}};
  }
  std::vector<encore::Constant> StepConstants() const {
    std::vector<encore::Constant> all = Constants();
    all.push_back({"x", x, kN * sizeof(float)});
    return all;
  }
  // Input b; x is the call's output (one Run per solve) or the state above.
  encore::Status Start(encore::Call& c, float* xs) const {
    return Ok(ex::LaunchCgStart(static_cast<const float*>(c.input(0).data), kN, xs, r, p, rs, more, kTol, iterations,
                                c.stream()));
  }
  encore::Status Step(encore::Call& c, float* xs) const {
    return Ok(ex::LaunchCgStep(a, kN, xs, r, p, rs, more, kTol, iterations, c.stream()));
  }
};

// A = M M^T / n + I: symmetric positive definite, well conditioned enough
// that float CG converges in well under n iterations.
std::vector<float> SpdMatrix(std::mt19937& rng) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> m(kN * kN), a(kN * kN);
  for (float& v : m) v = g(rng);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      double sum = 0;
      for (int k = 0; k < kN; ++k) sum += static_cast<double>(m[i * kN + k]) * m[j * kN + k];
      a[i * kN + j] = static_cast<float>(sum / kN) + (i == j ? 1.0f : 0.0f);
    }
  }
  return a;
}

double Residual(const std::vector<float>& a, const std::vector<float>& x, const std::vector<float>& b) {
  double worst = 0;
  for (int i = 0; i < kN; ++i) {
    double ax = 0;
    for (int j = 0; j < kN; ++j) ax += static_cast<double>(a[i * kN + j]) * x[j];
    worst = std::max(worst, std::abs(ax - b[i]));
  }
  return worst;
}

void RunCg(encore::Manager& mgr, cudaStream_t s) {
  Cg cg;
  std::mt19937 rng(9);
  const std::vector<float> a = SpdMatrix(rng);
  EX_CUDA(cudaMemcpy(cg.a, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  auto solve_fn = [&cg](int64_t bound) {
    return [&cg, bound](encore::Call& c) -> encore::Status {
      float* x = static_cast<float*>(c.output(0).data);
      ENCORE_RETURN_IF_ERROR(cg.Start(c, x));
      return c.While(cg.more, [&cg, x](encore::Call& body) { return cg.Step(body, x); }, bound);
    };
  };
  encore::Method* solve = Register(mgr, "cg_solve", solve_fn(kN), cg.Constants());
  encore::Method* start =
      Register(mgr, "cg_start", [&cg](encore::Call& c) { return cg.Start(c, cg.x); }, cg.StepConstants());
  encore::Method* step =
      Register(mgr, "cg_step", [&cg](encore::Call& c) { return cg.Step(c, cg.x); }, cg.StepConstants());
  float* b = Alloc<float>(kN);
  float* x1 = Alloc<float>(kN);
  encore::TensorRef tb = ex::Floats(b, {kN}), tx1 = ex::Floats(x1, {kN});
  bool* more_host = nullptr;
  EX_CUDA(cudaMallocHost(&more_host, 1));
  std::normal_distribution<float> g(0.0f, 1.0f);
  double us_solve = 0, us_iter = 0, worst = 0;
  long long iterations = 0;
  const int kSolves = ex::Rounds(20, 6);
  for (int i = 0; i < kSolves; ++i) {
    std::vector<float> hb(kN);
    for (float& v : hb) v = g(rng);
    EX_CUDA(cudaMemcpy(b, hb.data(), kN * 4, cudaMemcpyHostToDevice));
    double t0 = NowUs();
    EX_OK(solve->Run({&tb, 1}, {&tx1, 1}, s));
    EX_CUDA(cudaStreamSynchronize(s));
    if (i >= 5) us_solve += NowUs() - t0;
    const int its = Download(cg.iterations, 1)[0];
    t0 = NowUs();
    EX_OK(start->Run({&tb, 1}, {}, s));
    EX_CUDA(cudaMemcpyAsync(more_host, cg.more, 1, cudaMemcpyDeviceToHost, s));
    EX_CUDA(cudaStreamSynchronize(s));
    while (*more_host) {
      EX_OK(step->Run({&tb, 1}, {}, s));
      EX_CUDA(cudaMemcpyAsync(more_host, cg.more, 1, cudaMemcpyDeviceToHost, s));
      EX_CUDA(cudaStreamSynchronize(s));
    }
    if (i >= 5) us_iter += NowUs() - t0, iterations += its;
    const std::vector<float> xa = Download(x1, kN), xb = Download(cg.x, kN);
    Expect(xa == xb && Download(cg.iterations, 1)[0] == its, "solve " + std::to_string(i) + ": the same x both ways");
    worst = std::max(worst, Residual(a, xa, hb));
    if (i < 3) std::printf("  solve %d: %d iterations, max |Ax - b| %.2e\n", i, its, Residual(a, xa, hb));
  }
  std::printf("cg: %lld iterations in %d solves; one Run per solve %.1f us/iteration, one Run per iteration "
              "%.1f us/iteration: %.1fx; worst max |Ax - b| %.2e\n",
              iterations, kSolves - 5, us_solve / iterations, us_iter / iterations, us_iter / us_solve, worst);
  Expect(worst < 1e-2, "every solve converged");
  Expect(solve->Report().phase == encore::MethodPhase::kReplay, "cg_solve replays its graph");
  ex::PrintReport(*solve);

  // A runaway: a bound of 3 iterations cannot converge; the loop stops at 3
  // and the next Run says so.
  encore::Method* capped = Register(mgr, "cg_capped", solve_fn(3), cg.Constants());
  EX_OK(capped->Run({&tb, 1}, {&tx1, 1}, s));
  const encore::Status next = capped->Run({&tb, 1}, {&tx1, 1}, s);
  std::printf("runaway: %s\n", next.ToString().c_str());
  Expect(next.code() == encore::StatusCode::kFailedPrecondition, "a loop stopped by its bound is reported");
  EX_CUDA(cudaStreamSynchronize(s));
  EX_CUDA(cudaFreeHost(more_host));
}

}  // namespace

int main() {
  if (int rc = ex::RequireGpu("device_loop")) return rc;
  auto mgr = *encore::Manager::Create();
  cudaStream_t s;
  EX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  RunDecode(*mgr, s);
  RunCg(*mgr, s);
  std::printf("device_loop: OK\n");
  return 0;
}
