// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/control/internal/body_stream_pool.h"

#include <string>
#include <utility>

#include "encore/core/internal/scoped_thread_capture.h"

namespace encore {
namespace {
constexpr int kMaxDepth = 64;
}  // namespace

Status BodyStreamPool::Prepare(int depth) {
  if (depth < 1 || depth > kMaxDepth) {
    return InvalidArgumentError("BodyStreamPool::Prepare: depth " + std::to_string(depth) + " is outside 1.." +
                                std::to_string(kMaxDepth));
  }
  if (static_cast<int>(streams_.size()) >= depth) return OkStatus();
  if (ScopedThreadCapture::Active()) {
    return FailedPreconditionError(
        "BodyStreamPool::Prepare: called inside a capture; body streams must be created before it begins");
  }
  streams_.reserve(depth);
  while (static_cast<int>(streams_.size()) < depth) {
    ENCORE_ASSIGN_OR_RETURN(Stream s, Stream::Create(cudaStreamNonBlocking));
    streams_.push_back(std::move(s));
  }
  return OkStatus();
}

StatusOr<cudaStream_t> BodyStreamPool::At(int level) const {
  if (level < 0 || level >= static_cast<int>(streams_.size())) {
    return ResourceExhaustedError("If/While nested " + std::to_string(level + 1) +
                                  " deep, deeper than the body streams prepared before the capture (" +
                                  std::to_string(streams_.size()) + " levels)");
  }
  return streams_[level].get();
}

}  // namespace encore
