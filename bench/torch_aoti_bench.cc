// SPDX-License-Identifier: Apache-2.0
// The CPU and end-to-end cost per call of a PyTorch model served four ways,
// on one stream, the caller's input and output tensors rotating among 4:
//
//   eager            the package's default runner, result copied out
//   encore auto      AotiMethod under encore, binding=auto (the default)
//   encore staged    the same with binding=staged
//   CUDAGraph+copy   at::cuda::CUDAGraph (what torch.cuda.CUDAGraph wraps)
//                    of the single-threaded runner: copy_ in, replay(),
//                    copy_ out
//   CUDAGraph replay replay() alone, on its static tensors
//   floor            cudaGraphLaunch of that graph's executable, measured
//                    first and last (drift shows as a difference)
//
// Variants take turns (bench_util's MeasureInterleaved), after warmup; each
// number is the median of the repeats. Every variant's output is first
// checked bit-equal to the eager one. --body mlp runs the adapter tests'
// libtorch MLP instead of a package (for when packages cannot be loaded).
// bench/torch_aoti_cudagraph.py measures torch.cuda.CUDAGraph from Python.
//
//   torch_aoti_bench --package decoder.pt2 [--body aoti|mlp] [--json PATH] [--quick]
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "encore/bench/bench_util.h"
#include "encore/examples/example_checks.h"  // not example_util.h: no spdlog beside PyTorch's fmt
#include "encore/encore.h"
#include "encore/interop/torch.h"

namespace ex = encore::examples;
namespace et = encore::torch;
using Loader = torch::inductor::AOTIModelPackageLoader;

namespace {

constexpr int kBuffers = 4;

// A model the benchmark serves: its eager call and a method spec.
struct Model {
  std::string what;
  std::vector<int64_t> in_shape, out_shape;
  at::ScalarType dtype = at::kFloat;
  std::function<at::Tensor(const at::Tensor&)> eager;       // what a user calls
  std::function<at::Tensor(const at::Tensor&)> capturable;  // the same, safe in a capture
  std::function<encore::MethodSpec(const std::string&)> spec;
};

Model AotiModel(const std::string& path) {
  auto eager = std::make_shared<Loader>(path);
  auto single = std::make_shared<Loader>(path, "model", /*run_single_threaded=*/true);
  Model m;
  m.what = "AOTInductor package " + path;
  m.in_shape = m.out_shape = {4, 32, 768};
  m.dtype = at::kBFloat16;
  m.eager = [eager](const at::Tensor& x) { return eager->run({x}, c10::cuda::getCurrentCUDAStream().stream())[0]; };
  m.capturable = [single](const at::Tensor& x) {
    return single->run({x}, c10::cuda::getCurrentCUDAStream().stream())[0];
  };
  m.spec = [path](const std::string& name) { return EX_OK(et::AotiMethod(name, path)); };
  return m;
}

Model MlpModel() {
  auto w = std::make_shared<std::vector<at::Tensor>>();
  at::TensorOptions f = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  for (auto sizes : {std::vector<int64_t>{256, 1024}, {1024}, {1024, 256}, {256}}) w->push_back(at::randn(sizes, f) * 0.05);
  auto forward = [w](const at::Tensor& x) {
    return at::matmul(at::gelu(at::matmul(x, (*w)[0]) + (*w)[1]), (*w)[2]) + (*w)[3];
  };
  Model m;
  m.what = "libtorch MLP 256-1024-256, batch 64";
  m.in_shape = {64, 256};
  m.out_shape = {64, 256};
  m.eager = m.capturable = forward;
  m.spec = [forward](const std::string& name) {
    encore::MethodSpec spec;
    spec.name = name;
    spec.constants = std::vector<encore::Constant>{};
    spec.fn = [forward](encore::Call& call) -> encore::Status {
      ENCORE_ASSIGN_OR_RETURN(et::Scope scope, et::Scope::Enter(call));
      return scope.Run([&] {
        et::ToTensor(call.output(0), scope.device()).copy_(forward(et::ToTensor(call.input(0), scope.device())));
      });
    };
    return spec;
  };
  return m;
}

encore::Method* Register(encore::Manager& manager, const Model& m, const std::string& name, encore::Binding b) {
  encore::MethodSpec spec = m.spec(name);
  encore::MethodFlags flags;
  flags.binding = b;
  spec.flags = flags;
  return EX_OK(manager.Register(std::move(spec)));
}

void RunMethod(encore::Method* method, const at::Tensor& in, const at::Tensor& out, cudaStream_t s) {
  encore::TensorRef i = EX_OK(et::ToTensorRef(in)), o = EX_OK(et::ToTensorRef(out));
  EX_OK(method->Run({&i, 1}, {&o, 1}, s));
}

std::string Json(const std::map<std::string, encore::bench::Timing>& t, const Model& m) {
  std::string j = "{\"body\": \"" + m.what + "\", \"variants\": {";
  bool first = true;
  for (const auto& [name, v] : t) {
    j += (first ? "" : ", ") + std::string("\"") + name + "\": {\"cpu_us\": " + std::to_string(v.cpu_us) +
         ", \"e2e_us\": " + std::to_string(v.e2e_us) + "}";
    first = false;
  }
  return j + "}}\n";
}

// The served model, its two encore methods, rotating tensors and PyTorch's
// own graph of the capturable call (warmed up first, as torch.cuda.graph
// does).
struct Setup {
  Model m;
  std::unique_ptr<encore::Manager> manager;
  encore::Method* automatic = nullptr;
  encore::Method* staged = nullptr;
  std::vector<at::Tensor> in, out;
  at::Tensor static_in, static_out;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  cudaGraphExec_t exec = nullptr;
};

void Prepare(Setup& b, cudaStream_t s) {
  b.manager = EX_OK(encore::Manager::Create());
  b.automatic = Register(*b.manager, b.m, "auto", encore::Binding::kAuto);
  b.staged = Register(*b.manager, b.m, "staged", encore::Binding::kStaged);
  at::TensorOptions opts = at::TensorOptions().device(at::kCUDA).dtype(b.m.dtype);
  for (int i = 0; i < kBuffers; ++i) {
    b.in.push_back(at::randn(b.m.in_shape, opts));
    b.out.push_back(at::empty(b.m.out_shape, opts));
  }
  b.static_in = b.in[0].clone();
  for (int i = 0; i < 3; ++i) (void)b.m.capturable(b.static_in);
  EX_CUDA(cudaStreamSynchronize(s));
  b.graph = std::make_unique<at::cuda::CUDAGraph>();
  b.graph->capture_begin();
  b.static_out = b.m.capturable(b.static_in);
  b.graph->capture_end();
  b.exec = b.graph->raw_cuda_graph_exec();
}

encore::bench::Variants MakeVariants(Setup& b, cudaStream_t s) {
  auto floor = [&b, s](int) { EX_CUDA(cudaGraphLaunch(b.exec, s)); };
  return {
      {"floor (start): cudaGraphLaunch of PyTorch's graph", floor},
      {"eager", [&b](int i) { b.out[i % kBuffers].copy_(b.m.eager(b.in[i % kBuffers])); }},
      {"encore auto", [&b, s](int i) { RunMethod(b.automatic, b.in[i % kBuffers], b.out[i % kBuffers], s); }},
      {"encore staged", [&b, s](int i) { RunMethod(b.staged, b.in[i % kBuffers], b.out[i % kBuffers], s); }},
      {"CUDAGraph copy_ + replay + copy_",
       [&b](int i) {
         b.static_in.copy_(b.in[i % kBuffers]);
         b.graph->replay();
         b.out[i % kBuffers].copy_(b.static_out);
       }},
      {"CUDAGraph replay alone", [&b](int) { b.graph->replay(); }},
      {"floor (end): cudaGraphLaunch of PyTorch's graph", floor},
  };
}

// Every variant that writes outputs (1 to 4) agrees with the eager call, bit
// for bit; these calls are also the encore methods' warmups and captures.
void CheckAgainstEager(Setup& b, const encore::bench::Variants& variants) {
  for (size_t v = 1; v < 5; ++v) {
    for (int i = 0; i < 8; ++i) {
      variants[v].second(i);
      at::Tensor want = b.m.eager(b.in[i % kBuffers]);
      ex::Expect(at::equal(b.out[i % kBuffers], want),
                 variants[v].first + ": call " + std::to_string(i) + " differs from the eager result");
    }
  }
}

bool Print(Setup& b, const encore::bench::Variants& variants, std::map<std::string, encore::bench::Timing>& t,
           const std::string& json) {
  std::printf("%-52s %12s %12s\n", "per call (median of repeats)", "CPU us", "end-to-end us");
  std::string table = "| " + b.m.what + ", per call | CPU µs | end-to-end µs |\n|---|---|---|\n";
  for (const auto& [name, fn] : variants) {
    std::printf("%-52s %12.2f %12.2f\n", name.c_str(), t[name].cpu_us, t[name].e2e_us);
    char row[256];
    std::snprintf(row, sizeof(row), "| %s | %.2f | %.2f |\n", name.c_str(), t[name].cpu_us, t[name].e2e_us);
    table += row;
  }
  encore::MethodReport r = b.automatic->Report();
  std::printf("encore auto: binding %s (%s), %zu nodes, %lld replays\n",
              std::string(encore::BindingName(r.binding)).c_str(), r.binding_reason.c_str(), r.graph_nodes,
              static_cast<long long>(r.replays));
  bool ok = encore::bench::WriteResults(Json(t, b.m), json, "torch_aoti_results.json").empty();
  ok &= encore::bench::WriteResults(table, json + ".md", "torch_aoti_table.md").empty();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string package, body = "aoti", json = "torch_aoti_results.json";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--package" && i + 1 < argc) package = argv[++i];
    else if (a == "--body" && i + 1 < argc) body = argv[++i];
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "--quick") quick = true;
    else ex::Fail("unknown argument " + a + " (--package PATH --body aoti|mlp --json PATH --quick)");
  }
  if (int rc = ex::RequireGpu("torch_aoti_bench")) return rc;
  if (body == "aoti" && package.empty()) ex::Fail("--package PATH is needed with --body aoti");
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(stream);
  const cudaStream_t s = stream.stream();
  at::InferenceMode inference;
  Setup b;
  b.m = body == "mlp" ? MlpModel() : AotiModel(package);
  Prepare(b, s);
  encore::bench::Variants variants = MakeVariants(b, s);
  CheckAgainstEager(b, variants);
  std::printf("torch_aoti_bench: %s; outputs of every variant bit-equal to eager\n", b.m.what.c_str());
  const int n = quick ? 20 : 100, repeats = quick ? 5 : 21;
  auto t = encore::bench::MeasureInterleaved(s, n, repeats, /*warmup=*/20, variants);
  return Print(b, variants, t, json) ? 0 : 1;
}
