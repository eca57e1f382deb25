// SPDX-License-Identifier: Apache-2.0
// decode: a decode loop, in two parts.
//
// Part 1. Each step appends a token's vector to a KV cache and attends over
// the cache. The cache and its length are the method's constants: device
// buffers whose addresses a graph bakes in (the length lives on the device,
// so every replay reads and bumps the current value). When the cache is full
// the loop moves it into a buffer twice as big; the graph still points at the
// old one, so the loop calls Release() and encore warms up and captures again.
//
// Part 2. A projection whose batch size changes from call to call, with
// on_new_shape=recapture and max_graphs=3: encore keeps a graph per batch
// size, at most 3, and recaptures (updating the least recently used
// executable in place) for a size it does not hold.
//
// Every output is compared bit for bit with the same kernel launched eagerly.
//
//   bazel run //examples:decode
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_kernels.h"
#include "encore/examples/example_util.h"

namespace ex = encore::examples;
using ex::DeviceArray;

constexpr int kDim = 64;

std::vector<float> Random(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

bool SameBits(const DeviceArray<float>& a, const DeviceArray<float>& b, size_t n, cudaStream_t s) {
  std::vector<float> x = a.Download(s), y = b.Download(s);
  return std::memcmp(x.data(), y.data(), n * sizeof(float)) == 0;
}

// ---------------------------------------------------------------- part 1 --
void GrowingCache(encore::Manager& manager, cudaStream_t stream, std::mt19937& rng) {
  constexpr int kSteps = 200;
  struct KvCache {
    float* data = nullptr;
    int capacity = 0;  // rows of kDim floats
  };
  KvCache cache{nullptr, 16};
  EX_CUDA(cudaMalloc(reinterpret_cast<void**>(&cache.data), cache.capacity * kDim * sizeof(float)));
  DeviceArray<int> len(1);  // rows in the cache, on the device
  EX_CUDA(cudaMemsetAsync(len.get(), 0, sizeof(int), stream));

  encore::MethodSpec spec;
  spec.name = "decode_step";
  // The lambda reads `cache` when it runs, so after a move the next capture
  // bakes in the new buffer.
  spec.fn = [&cache, &len](encore::Call& call) {
    return encore::CudaStatus(ex::LaunchDecodeStep(static_cast<const float*>(call.input(0).data), cache.data,
                                             cache.capacity, len.get(), static_cast<float*>(call.output(0).data),
                                             kDim, call.stream()),
                        "decode step");
  };
  // The cache and its length are constants. The cache moves when it grows;
  // Release(new constants) hands encore the new address.
  auto constants = [&] {
    return std::vector<encore::Constant>{{"kv_cache", cache.data, cache.capacity * kDim * sizeof(float)},
                                         {"len", len.get(), sizeof(int)}};
  };
  spec.constants = constants();
  encore::Method* step = EX_OK(manager.Register(std::move(spec)));

  // The eager reference: the same kernel on its own cache, big enough for all
  // steps.
  DeviceArray<float> ref_cache(kSteps * kDim);
  DeviceArray<int> ref_len(1);
  EX_CUDA(cudaMemsetAsync(ref_len.get(), 0, sizeof(int), stream));
  DeviceArray<float> ref_y(kDim);

  std::vector<DeviceArray<float>> tokens, outs;
  for (int i = 0; i < 16; ++i) {
    tokens.emplace_back(kDim);
    tokens.back().Upload(Random(kDim, rng));
  }
  for (int i = 0; i < 3; ++i) outs.emplace_back(kDim);

  std::printf("part 1: %d decode steps, KV cache starting at %d rows\n", kSteps, cache.capacity);
  int equal = 0, moves = 0;
  for (int t = 0; t < kSteps; ++t) {
    if (t == cache.capacity) {  // full: move to a buffer twice as big
      KvCache bigger{nullptr, cache.capacity * 2};
      EX_CUDA(cudaMalloc(reinterpret_cast<void**>(&bigger.data), bigger.capacity * kDim * sizeof(float)));
      EX_CUDA(cudaMemcpyAsync(bigger.data, cache.data, cache.capacity * kDim * sizeof(float),
                              cudaMemcpyDeviceToDevice, stream));
      EX_CUDA(cudaStreamSynchronize(stream));
      EX_CUDA(cudaFree(cache.data));
      cache = bigger;
      // Waits for the last launch, drops the graph, takes the new address.
      EX_OK(step->Release(constants()));
      ++moves;
      std::printf("  step %3d: cache full, moved to %d rows; Release(), the method warms up and captures again\n",
                  t + 1, cache.capacity);
    }
    DeviceArray<float>& x = tokens[t % tokens.size()];
    DeviceArray<float>& y = outs[t % outs.size()];
    encore::TensorRef in = ex::Floats(x.get(), {1, kDim}), out = ex::Floats(y.get(), {1, kDim});
    EX_OK(step->Run({&in, 1}, {&out, 1}, stream));
    EX_CUDA(ex::LaunchDecodeStep(x.get(), ref_cache.get(), kSteps, ref_len.get(), ref_y.get(), kDim, stream));
    equal += SameBits(y, ref_y, kDim, stream);
  }
  int final_len = len.Download(stream)[0];
  encore::MethodReport r = step->Report();
  std::printf("  %d/%d steps equal to the eager reference bit for bit; cache length %d; %d moves\n", equal, kSteps,
              final_len, moves);
  std::printf("  report: %s\n", r.ToJson().c_str());
  ex::Expect(equal == kSteps, "decode_step: outputs differ from the eager reference");
  ex::Expect(final_len == kSteps, "decode_step: the cache length on the device is " + std::to_string(final_len));
  ex::Expect(r.captures == moves + 1 && r.capture_failures == 0,
             "decode_step: expected one capture per cache buffer (" + std::to_string(moves + 1) + "), got " +
                 std::to_string(r.captures));
  EX_OK(step->Release());
  EX_CUDA(cudaFree(cache.data));
}

// ---------------------------------------------------------------- part 2 --
void ChangingBatch(encore::Manager& manager, cudaStream_t stream, std::mt19937& rng) {
  constexpr int kMaxBatch = 8;
  const std::vector<int> batches = {1, 1, 1, 1, 1, 2, 2, 4, 4, 1, 8, 8, 2, 4, 1, 8, 2, 2, 4, 8};
  DeviceArray<float> w(kDim * kDim), b(kDim);
  w.Upload(Random(kDim * kDim, rng));
  b.Upload(Random(kDim, rng));

  encore::MethodSpec spec;
  spec.name = "project";
  spec.fn = [&w, &b](encore::Call& call) {
    const encore::TensorRef& x = call.input(0);
    int batch = static_cast<int>(x.shape[0]);
    return encore::CudaStatus(ex::LaunchLinear(static_cast<const float*>(x.data), w.get(), b.get(),
                                         static_cast<float*>(call.output(0).data), batch, kDim, kDim,
                                         /*relu=*/true, call.stream()),
                        "projection");
  };
  spec.constants = std::vector<encore::Constant>{{"w", w.get(), w.bytes()}, {"b", b.get(), b.bytes()}};
  encore::MethodFlags flags;
  flags.on_new_shape = encore::ShapePolicy::kRecapture;
  flags.max_graphs = 3;
  spec.flags = flags;
  encore::Method* project = EX_OK(manager.Register(std::move(spec)));

  DeviceArray<float> x(kMaxBatch * kDim), ref(kMaxBatch * kDim);
  std::vector<DeviceArray<float>> outs;
  for (int i = 0; i < 2; ++i) outs.emplace_back(kMaxBatch * kDim);

  std::printf("\npart 2: batch size changing, on_new_shape=recapture, max_graphs=3\n");
  int equal = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const int n = batches[i];
    x.Upload(Random(kMaxBatch * kDim, rng));
    DeviceArray<float>& y = outs[i % outs.size()];
    encore::TensorRef in = ex::Floats(x.get(), {n, kDim}), out = ex::Floats(y.get(), {n, kDim});
    encore::MethodReport before = project->Report();
    EX_OK(project->Run({&in, 1}, {&out, 1}, stream));
    encore::MethodReport after = project->Report();

    EX_CUDA(ex::LaunchLinear(x.get(), w.get(), b.get(), ref.get(), n, kDim, kDim, true, stream));
    bool same = SameBits(y, ref, static_cast<size_t>(n) * kDim, stream);
    equal += same;
    const char* what = after.warmup_calls > before.warmup_calls ? "warmup (eager)"
                       : after.captures > before.captures       ? "capture"
                       : after.updates_in_place > before.updates_in_place ? "recapture, executable updated in place"
                       : after.recaptures > before.recaptures             ? "recapture, new executable"
                       : after.replays > before.replays                   ? "replay"
                                                                          : "eager";
    std::printf("  call %2zu  batch %d  %-40s graphs kept: %zu  %s\n", i + 1, n, what,
                after.captured_input_shapes.size(), same ? "equal" : "DIFFERENT");
  }
  encore::MethodReport r = project->Report();
  std::printf("  %d/%zu calls equal to the eager reference bit for bit\n", equal, batches.size());
  std::printf("  report: %s\n", r.ToJson().c_str());
  ex::Expect(equal == static_cast<int>(batches.size()), "project: outputs differ from the eager reference");
  ex::Expect(r.recaptures > 0 && r.refusals == 0 && r.capture_failures == 0,
             "project: expected recaptures and no refusals or capture failures");
  ex::Expect(r.captured_input_shapes.size() <= 3, "project: more than max_graphs=3 graphs kept");
}

int main() {
  if (int rc = ex::RequireGpu("decode")) return rc;
  cudaStream_t stream;
  EX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937 rng(11);
  auto manager = EX_OK(encore::Manager::Create());
  GrowingCache(*manager, stream, rng);
  ChangingBatch(*manager, stream, rng);
  EX_CUDA(cudaStreamSynchronize(stream));
  std::printf("decode: OK\n");
  return 0;
}
