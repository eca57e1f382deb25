// SPDX-License-Identifier: Apache-2.0
#include "encore/core/cuda_error.h"

#include <string>

#include "encore/core/cuda_archs.h"

namespace encore {

bool IsCaptureError(cudaError_t err) {
  switch (err) {
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorStreamCaptureWrongThread:
    case cudaErrorCapturedEvent:
      return true;
    default:
      return false;
  }
}

bool IsMissingKernelImageError(cudaError_t err) {
  switch (err) {
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion:
      return true;
    default:
      return false;
  }
}

bool IsContextLostError(cudaError_t err) {
  switch (err) {
    case cudaErrorAssert:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

StatusCode CudaErrorCode(cudaError_t err) {
  if (err == cudaSuccess) return StatusCode::kOk;
  if (IsCaptureError(err)) return StatusCode::kFailedPrecondition;
  if (IsContextLostError(err)) return StatusCode::kUnavailable;
  switch (err) {
    case cudaErrorMemoryAllocation:
      return StatusCode::kResourceExhausted;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidSymbol:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidDevice:
      return StatusCode::kInvalidArgument;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorInitializationError:
      return StatusCode::kUnavailable;
    case cudaErrorNotSupported:
    case cudaErrorNotPermitted:
      return StatusCode::kUnimplemented;
    case cudaErrorGraphExecUpdateFailure:
    case cudaErrorNotReady:
      return StatusCode::kFailedPrecondition;
    default:
      return StatusCode::kInternal;
  }
}

Status CudaStatus(cudaError_t err, std::string_view api, std::string_view context) {
  if (err == cudaSuccess) return OkStatus();
  std::string msg(api);
  msg += ": ";
  msg += cudaGetErrorName(err);
  msg += " (";
  msg += cudaGetErrorString(err);
  msg += ")";
  if (IsContextLostError(err)) msg += "; the CUDA context is lost for this process";
  if (IsMissingKernelImageError(err)) {
    // The usual cause is a GPU newer or older than the build's code: say
    // what the build has and how to change it.
    msg += "; encore's kernels were built for ";
    msg += kBuiltCudaArchs;
    msg += ": rebuild with this GPU's architecture in --@encore//tools:cuda_archs (e.g. sm_89 for an L4 or L40S)";
  }
  if (!context.empty()) {
    msg += "; ";
    msg += context;
  }
  return Status(CudaErrorCode(err), msg);
}

}  // namespace encore
