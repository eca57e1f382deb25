// SPDX-License-Identifier: Apache-2.0
// torch_mlp: libtorch code as an encore method. A 2-layer MLP written with
// ATen ops (at::matmul, at::gelu; PyTorch allocates the intermediates) runs
// under encore::torch::Scope: encore warms it up, captures it into a CUDA
// graph with PyTorch's allocator routed to the graph's own pool, and replays
// it while the caller's tensors rotate. Every output is compared bit for bit
// with the same code run without encore. Needs a GPU (exit 77 without one)
// and the CMake target encore::torch (tools/torch_suite.sh builds and runs it).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdio>
#include <string>
#include <vector>

#include "encore/encore.h"
#include "encore/examples/example_checks.h"  // not example_util.h: no spdlog beside PyTorch's fmt
#include "encore/interop/torch.h"

namespace ex = encore::examples;

int main() {
  if (int rc = ex::RequireGpu("torch_mlp")) return rc;
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(stream);
  at::InferenceMode inference;
  at::TensorOptions f = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  at::Tensor w1 = at::randn({512, 2048}, f) * 0.03, b1 = at::randn({2048}, f) * 0.1;
  at::Tensor w2 = at::randn({2048, 512}, f) * 0.03, b2 = at::randn({512}, f) * 0.1;
  auto forward = [&](const at::Tensor& x) { return at::matmul(at::gelu(at::matmul(x, w1) + b1), w2) + b2; };

  // 1. The method: the body enters a Scope and runs ATen code on the call's
  // stream; the weights are constants that never move and are never written.
  auto manager = EX_OK(encore::Manager::Create());
  encore::MethodSpec spec;
  spec.name = "mlp";
  spec.constants = std::vector<encore::Constant>{{"w1", w1.data_ptr(), w1.nbytes(), true},
                                                 {"b1", b1.data_ptr(), b1.nbytes(), true},
                                                 {"w2", w2.data_ptr(), w2.nbytes(), true},
                                                 {"b2", b2.data_ptr(), b2.nbytes(), true}};
  spec.fn = [&](encore::Call& call) -> encore::Status {
    ENCORE_ASSIGN_OR_RETURN(encore::torch::Scope scope, encore::torch::Scope::Enter(call));
    return scope.Run([&] {
      at::Tensor x = encore::torch::ToTensor(call.input(0), scope.device());
      encore::torch::ToTensor(call.output(0), scope.device()).copy_(forward(x));
    });
  };
  encore::Method* mlp = EX_OK(manager->Register(std::move(spec)));

  // 2. 100 calls over 4 rotating input and output tensors, each checked.
  std::vector<at::Tensor> in, out;
  for (int i = 0; i < 4; ++i) {
    in.push_back(at::empty({128, 512}, f));
    out.push_back(at::empty({128, 512}, f));
  }
  int equal = 0;
  for (int i = 0; i < 100; ++i) {
    at::Tensor& x = in[i % 4];
    x.normal_();
    encore::TensorRef xr = EX_OK(encore::torch::ToTensorRef(x)), yr = EX_OK(encore::torch::ToTensorRef(out[i % 4]));
    EX_OK(mlp->Run({&xr, 1}, {&yr, 1}, stream.stream()));
    equal += at::equal(out[i % 4], forward(x)) ? 1 : 0;
  }
  encore::MethodReport r = mlp->Report();
  std::printf("torch_mlp: %d of 100 outputs bit-equal to libtorch without encore; %lld captures, %lld replays, "
              "binding %s, %zu graph nodes\n",
              equal, static_cast<long long>(r.captures), static_cast<long long>(r.replays),
              std::string(encore::BindingName(r.binding)).c_str(), r.graph_nodes);
  ex::Expect(equal == 100 && r.captures == 1, "every output bit-equal, one capture");
  return 0;
}
