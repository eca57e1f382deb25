// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/nvtx.h"

#include <nvtx3/nvToolsExt.h>

namespace encore {

std::string_view NvtxRangeSuffix(NvtxRange r) {
  switch (r) {
    case NvtxRange::kWarmup: return "warmup";
    case NvtxRange::kCapture: return "capture";
    case NvtxRange::kReplay: return "replay";
    case NvtxRange::kEager: return "eager";
    case NvtxRange::kVerify: return "verify";
    case NvtxRange::kPrecapture: return "precapture";
    case NvtxRange::kCaptureRecord: return "capture:record";
    case NvtxRange::kCaptureInstantiate: return "capture:instantiate";
    case NvtxRange::kCaptureUpdate: return "capture:update";
    case NvtxRange::kCaptureFirstLaunch: return "capture:first_launch";
    case NvtxRange::kCount: break;
  }
  return "unknown";
}

std::string NvtxRangeName(std::string_view method, NvtxRange r) {
  std::string n(method);
  n += ':';
  n += NvtxRangeSuffix(r);
  return n;
}

void* NvtxDomain() noexcept {
  static void* const domain = static_cast<void*>(nvtxDomainCreateA(std::string(kNvtxDomain).c_str()));
  return domain;
}

NvtxMethodRanges::NvtxMethodRanges(std::string_view method) : domain_(NvtxDomain()) {
  if (domain_ == nullptr) return;
  auto d = static_cast<nvtxDomainHandle_t>(domain_);
  for (int i = 0; i < static_cast<int>(NvtxRange::kCount); ++i) {
    names_[i] = static_cast<void*>(nvtxDomainRegisterStringA(d, NvtxRangeName(method, static_cast<NvtxRange>(i)).c_str()));
  }
}

namespace internal {

void NvtxPush(void* domain, void* name) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = static_cast<nvtxStringHandle_t>(name);
  nvtxDomainRangePushEx(static_cast<nvtxDomainHandle_t>(domain), &a);
}

void NvtxPop(void* domain) noexcept { nvtxDomainRangePop(static_cast<nvtxDomainHandle_t>(domain)); }

}  // namespace internal
}  // namespace encore
