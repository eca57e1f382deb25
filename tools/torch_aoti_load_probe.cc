// SPDX-License-Identifier: Apache-2.0
// Loads an AOTInductor package with PyTorch's C++ AOTIModelPackageLoader and
// runs it once, printing each step, so that a crash says where it happened
// (on some hosts loading crashed the Python process). Built by
// tools/cmake/torch.cmake as tools_torch_aoti_load_probe. A fatal signal prints a
// native backtrace (glibc's backtrace_symbols_fd) before the process dies
// of it. tools/torch_suite.sh runs it in a child process per package.
//
//   torch_aoti_load_probe PACKAGE.pt2 [single|default]
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <execinfo.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace {

void Step(const char* what) {
  std::fprintf(stderr, "probe: %s\n", what);
  std::fflush(stderr);
}

void OnFatalSignal(int sig) {
  const char* name = strsignal(sig);
  (void)!write(2, "probe: FATAL SIGNAL ", 20);
  (void)!write(2, name, std::strlen(name));
  (void)!write(2, "; native backtrace:\n", 20);
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PACKAGE.pt2 [single|default]\n", argv[0]);
    return 2;
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) std::signal(sig, OnFatalSignal);
  const std::string path = argv[1];
  const bool single = argc < 3 || std::string(argv[2]) == "single";
  try {
    Step("reading the metadata");
    auto metadata = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(path, "model");
    for (const auto& [k, v] : metadata) std::fprintf(stderr, "probe:   metadata %s=%s\n", k.c_str(), v.c_str());
    Step(single ? "constructing AOTIModelPackageLoader (run_single_threaded=true)"
                : "constructing AOTIModelPackageLoader (default runner)");
    torch::inductor::AOTIModelPackageLoader loader(path, "model", single);
    Step("extracting the constants map");
    auto constants = loader.get_runner()->extract_constants_map(false);
    std::fprintf(stderr, "probe:   %zu constants\n", constants.size());
    c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
    c10::cuda::CUDAStreamGuard guard(stream);
    at::Tensor x = at::randn({4, 32, 768}, at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16));
    Step("running it once");
    std::vector<at::Tensor> out = loader.run({x}, stream.stream());
    stream.synchronize();
    std::fprintf(stderr, "probe:   %zu outputs, first %s, finite: %s\n", out.size(),
                 out.empty() ? "-" : c10::str(out[0].sizes()).c_str(),
                 out.empty() ? "-" : (at::isfinite(out[0]).all().item<bool>() ? "yes" : "no"));
    Step("OK");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe: exception: %s\n", e.what());
    return 1;
  }
  return 0;
}
