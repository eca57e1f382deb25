// SPDX-License-Identifier: Apache-2.0
#include "encore/core/cuda_handle.h"

#include "encore/core/internal/log.h"

namespace encore::internal {

void LogDestroyFailure(std::string_view what, cudaError_t err) noexcept {
  // Called from destructors: a logger that throws must not end the process.
  // The scope's log is the application's when a Method owns the handle.
  try {
    const std::string_view method = ScopedMethod();
    if (method.empty()) {
      ScopedEventLog().Error("destroy_failed", {{"what", what}, {"error", cudaGetErrorName(err)}});
    } else {
      ScopedEventLog().Error("destroy_failed",
                             {{"method", method}, {"what", what}, {"error", cudaGetErrorName(err)}});
    }
  } catch (...) {
  }
}

}  // namespace encore::internal
