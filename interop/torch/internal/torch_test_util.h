// SPDX-License-Identifier: Apache-2.0
// What the adapter's GPU tests share: a manager on a PyTorch stream, the
// 2-layer MLP body, views, the allocator's statistics, and tensors filled
// between replays to catch a graph writing memory it does not own.
#ifndef ENCORE_INTEROP_TORCH_INTERNAL_TORCH_TEST_UTIL_H_
#define ENCORE_INTEROP_TORCH_INTERNAL_TORCH_TEST_UTIL_H_

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "encore/graph/manager.h"
#include "encore/interop/torch.h"

namespace encore::torch::testing {

// Sizes of the MLP: x (kBatch, kIn) -> gelu(x W1 + b1) W2 + b2 (kBatch, kOut).
inline constexpr int64_t kBatch = 64, kIn = 256, kHidden = 1024, kOut = 256;

// PyTorch's headers carry their own fmt (12), which Debian's spdlog 1.10
// cannot use, so these tests include no spdlog header (tests/log_capture.h):
// encore's default logger writes to stdout and the tests read Report().
struct Fixture {
  std::unique_ptr<Manager> manager;
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false);

  explicit Fixture(MethodFlags defaults = {}) {
    ManagerOptions o;
    o.defaults = defaults;
    o.flags_text = "*:warmup=3";  // ENCORE_METHOD_FLAGS of the environment does not reach the tests
    auto m = Manager::Create(o);
    EXPECT_TRUE(m.ok()) << m.status();
    if (m.ok()) manager = *std::move(m);
  }
  ~Fixture() { manager.reset(); }
  cudaStream_t s() const { return stream.stream(); }
};

inline at::TensorOptions CudaFloat() { return at::TensorOptions().device(at::kCUDA).dtype(at::kFloat); }

// Deterministic values from a CPU generator, then on the GPU.
inline at::Tensor Random(at::IntArrayRef sizes, uint64_t seed, double scale = 1.0) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return (at::randn(sizes, g, at::TensorOptions().dtype(at::kFloat)) * scale).to(at::kCUDA);
}

struct Mlp {
  at::Tensor w1 = Random({kIn, kHidden}, 1, 0.05), b1 = Random({kHidden}, 2, 0.1);
  at::Tensor w2 = Random({kHidden, kOut}, 3, 0.05), b2 = Random({kOut}, 4, 0.1);

  // Intermediates from PyTorch's allocator on the current stream.
  at::Tensor Forward(const at::Tensor& x) const {
    return at::matmul(at::gelu(at::matmul(x, w1) + b1), w2) + b2;
  }
  std::vector<Constant> Constants() const {
    std::vector<Constant> c;
    int i = 0;
    for (const at::Tensor* t : {&w1, &b1, &w2, &b2}) {
      c.push_back(Constant{"mlp." + std::to_string(i++), t->data_ptr(), t->nbytes(), /*read_only=*/true});
    }
    return c;
  }
};

// The MLP as a method body under a Scope: reads input 0, writes output 0.
inline MethodSpec MlpMethod(std::string name, const Mlp* mlp, ScopeOptions options = {}) {
  MethodSpec spec;
  spec.name = std::move(name);
  spec.constants = mlp->Constants();
  spec.fn = [mlp, options](Call& call) -> Status {
    ENCORE_ASSIGN_OR_RETURN(Scope scope, Scope::Enter(call, options));
    return scope.Run([&] {
      at::Tensor x = ToTensor(call.input(0), scope.device());
      at::Tensor y = ToTensor(call.output(0), scope.device());
      y.copy_(mlp->Forward(x));
    });
  };
  return spec;
}

inline TensorRef Ref(const at::Tensor& t) {
  StatusOr<TensorRef> r = ToTensorRef(t);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : TensorRef{};
}

inline Status Run(Method* m, const at::Tensor& in, const at::Tensor& out, cudaStream_t s) {
  TensorRef i = Ref(in), o = Ref(out);
  return m->Run({&i, 1}, {&o, 1}, s);
}

// Bytes PyTorch's allocator holds from CUDA on the current device, after
// handing back what it can (emptyCache frees a released graph pool's blocks).
inline int64_t ReservedAfterEmptyCache() {
  c10::cuda::device_synchronize();
  c10::cuda::CUDACachingAllocator::emptyCache();
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return stats.reserved_bytes[0].current;  // StatType::AGGREGATE
}

// Tensors allocated on the current stream after a capture and filled with a
// value: a graph whose memory went back to PyTorch's pool writes them on
// replay. Sizes are those of the body's intermediates, so that freed blocks
// are the ones taken.
class Fills {
 public:
  Fills(const std::vector<int64_t>& numels, int copies, float value) : value_(value) {
    for (int c = 0; c < copies; ++c) {
      for (int64_t n : numels) tensors_.push_back(at::full({n}, value, CudaFloat()));
    }
  }
  // Elements that no longer hold the value (waits for the current stream).
  int64_t Overwritten() const {
    int64_t bad = 0;
    for (const at::Tensor& t : tensors_) bad += (t != value_).sum().item<int64_t>();
    return bad;
  }
  int64_t elements() const {
    int64_t n = 0;
    for (const at::Tensor& t : tensors_) n += t.numel();
    return n;
  }

 private:
  float value_;
  std::vector<at::Tensor> tensors_;
};

}  // namespace encore::torch::testing

#endif  // ENCORE_INTEROP_TORCH_INTERNAL_TORCH_TEST_UTIL_H_
