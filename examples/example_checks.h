// SPDX-License-Identifier: Apache-2.0
// The examples' "no GPU" exit and fail-fast checks, without spdlog: programs
// that also include PyTorch's headers (which carry a newer fmt than
// Debian's spdlog takes) use this header alone.
#ifndef ENCORE_EXAMPLES_EXAMPLE_CHECKS_H_
#define ENCORE_EXAMPLES_EXAMPLE_CHECKS_H_

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "encore/core/status.h"

namespace encore::examples {

// The exit code of a program that cannot run here: no GPU. tools/gpu_suite.sh
// counts it as skipped; ./run_example passes it on (non-zero).
constexpr int kNoGpu = 77;

// 0 when a CUDA device is visible; otherwise says why on stderr and returns
// kNoGpu, for `if (int rc = RequireGpu("quickstart")) return rc;`.
inline int RequireGpu(const char* program) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaSuccess && n > 0) return 0;
  std::fprintf(stderr, "encore: no CUDA device visible (cudaGetDeviceCount: %s); %s needs a GPU, exiting with %d\n",
               err == cudaSuccess ? "0 devices" : cudaGetErrorName(err), program, kNoGpu);
  return kNoGpu;
}

[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  std::exit(1);
}

inline void Expect(bool ok, const std::string& what) {
  if (!ok) Fail(what);
}

inline void CheckCuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) Fail(std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

inline void CheckOk(const Status& s, const char* what) {
  if (!s.ok()) Fail(std::string(what) + ": " + s.ToString());
}

template <class T>
T CheckOk(StatusOr<T> v, const char* what) {
  if (!v.ok()) Fail(std::string(what) + ": " + v.status().ToString());
  return *std::move(v);
}

}  // namespace encore::examples

#define EX_CUDA(expr) ::encore::examples::CheckCuda((expr), #expr)
#define EX_OK(expr) ::encore::examples::CheckOk((expr), #expr)

#endif  // ENCORE_EXAMPLES_EXAMPLE_CHECKS_H_
