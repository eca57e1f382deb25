#include "encore/core/cuda_handle.h"

#include "encore/core/log.h"

namespace encore::internal {

void LogDestroyFailure(std::string_view what, cudaError_t err) noexcept {
  // Called from destructors: a logger that throws must not end the process.
  try {
    EventLog().Error("destroy_failed", {{"what", what}, {"error", cudaGetErrorName(err)}});
  } catch (...) {
  }
}

}  // namespace encore::internal
