// SPDX-License-Identifier: Apache-2.0
#include "encore/interop/torch/internal/torch_status.h"  // private to interop/torch/

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace encore::torch::internal {
namespace {

constexpr size_t kMaxMessage = 600;

std::string Message(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const c10::Error& err) {
    return err.what_without_backtrace();
  } catch (const std::exception& err) {
    return err.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

// PyTorch's refusals inside a capture say so: "operation not permitted when
// stream is capturing" (a CUDA call a graph cannot hold), "Attempt to
// increase offset for a CUDA generator not in capture mode" (torch's random
// numbers in a capture PyTorch did not begin), "Cannot call ... during CUDA
// graph capture".
bool SpeaksOfCapture(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text.find("captur") != std::string::npos;
}

bool CaptureBroken(cudaStream_t stream) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t err = cudaStreamIsCapturing(stream, &st);
  if (err != cudaSuccess) (void)cudaGetLastError();  // the query's own error is not the body's
  return err != cudaSuccess || st != cudaStreamCaptureStatusActive;
}

}  // namespace

Status StatusFromException(std::exception_ptr e, bool capturing, cudaStream_t stream, std::string_view what) {
  std::string text = Message(e);
  // One line for the log; PyTorch's longer notes are cut.
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > kMaxMessage) text = text.substr(0, kMaxMessage) + "...";
  const std::string message = std::string(what) + " threw: " + text;
  if (capturing && (SpeaksOfCapture(text) || CaptureBroken(stream))) {
    return CaptureRefusal(message + " (inside a capture: the method runs eagerly)");
  }
  return InternalError(message);
}

}  // namespace encore::torch::internal
