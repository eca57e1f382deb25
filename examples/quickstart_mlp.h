// SPDX-License-Identifier: Apache-2.0
// The quickstart's method: a three-layer MLP (a tiled GEMM + bias, ReLU on
// the first two) on a batch of 32 rows, and the MethodSpec that registers it.
// examples/quickstart.cc runs it; bench/quickstart_bench.cc times it.
#ifndef ENCORE_EXAMPLES_QUICKSTART_MLP_H_
#define ENCORE_EXAMPLES_QUICKSTART_MLP_H_

#include <cuda_runtime_api.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"

namespace encore::examples {

constexpr int kBatch = 32, kIn = 256, kHidden = 256, kOut = 64;

inline std::vector<float> Random(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The weights: constants of the method (device buffers that never move).
struct Mlp {
  DeviceArray<float> w1{kIn * kHidden}, b1{kHidden};
  DeviceArray<float> w2{kHidden * kHidden}, b2{kHidden};
  DeviceArray<float> w3{kHidden * kOut}, b3{kOut};

  explicit Mlp(std::mt19937& rng) {
    for (DeviceArray<float>* w : {&w1, &w2, &w3}) w->Upload(Random(w->size(), 0.06f, rng));
    for (DeviceArray<float>* b : {&b1, &b2, &b3}) b->Upload(Random(b->size(), 0.1f, rng));
  }
};

// The forward pass: three launches. h1 and h2 are scratch of kBatch * kHidden.
inline cudaError_t Forward(const Mlp& m, const float* x, float* h1, float* h2, float* y, cudaStream_t s) {
  cudaError_t e = LaunchLinear(x, m.w1.get(), m.b1.get(), h1, kBatch, kIn, kHidden, /*relu=*/true, s);
  if (e == cudaSuccess) e = LaunchLinear(h1, m.w2.get(), m.b2.get(), h2, kBatch, kHidden, kHidden, true, s);
  if (e == cudaSuccess) e = LaunchLinear(h2, m.w3.get(), m.b3.get(), y, kBatch, kHidden, kOut, false, s);
  return e;
}

// The method: one input [kBatch, kIn], one output [kBatch, kOut]; its
// scratch comes from Call::Allocate, so a graph keeps it across replays.
inline MethodSpec MlpSpec(const Mlp& mlp, std::string name) {
  MethodSpec spec;
  spec.name = std::move(name);
  spec.fn = [&mlp](Call& call) -> Status {
    const size_t hidden_bytes = kBatch * kHidden * sizeof(float);
    ENCORE_ASSIGN_OR_RETURN(void* h1, call.Allocate(hidden_bytes));
    ENCORE_ASSIGN_OR_RETURN(void* h2, call.Allocate(hidden_bytes));
    return CudaStatus(Forward(mlp, static_cast<const float*>(call.input(0).data), static_cast<float*>(h1),
                              static_cast<float*>(h2), static_cast<float*>(call.output(0).data), call.stream()),
                      "mlp forward");
  };
  spec.constants = std::vector<Constant>{
      {"w1", mlp.w1.get(), mlp.w1.bytes()}, {"b1", mlp.b1.get(), mlp.b1.bytes()},
      {"w2", mlp.w2.get(), mlp.w2.bytes()}, {"b2", mlp.b2.get(), mlp.b2.bytes()},
      {"w3", mlp.w3.get(), mlp.w3.bytes()}, {"b3", mlp.b3.get(), mlp.b3.bytes()}};
  return spec;
}

}  // namespace encore::examples

#endif  // ENCORE_EXAMPLES_QUICKSTART_MLP_H_
