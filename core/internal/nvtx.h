// SPDX-License-Identifier: Apache-2.0
// NVTX ranges in domain "encore", so that Nsight Systems shows what encore
// does: `<method>:warmup|capture|replay|eager|verify|precapture`, and inside
// a capture its stages `<method>:capture:record|instantiate|update|first_launch`.
//
// Zero cost when no profiler is attached: NVTX3 is header-only and its calls
// go through an injection pointer, null without a tool, so creating the
// domain returns null; a method's names are registered once
// (nvtxDomainRegisterStringA) only when the domain exists, and a scope on
// the replay path then costs one load and a branch, formatting nothing.
// This header does not include NVTX (nvtx.cc does).
#ifndef ENCORE_CORE_INTERNAL_NVTX_H_
#define ENCORE_CORE_INTERNAL_NVTX_H_

#include <array>
#include <string>
#include <string_view>

namespace encore {

enum class NvtxRange : int {
  kWarmup,
  kCapture,
  kReplay,
  kEager,
  kVerify,
  kPrecapture,
  kCaptureRecord,
  kCaptureInstantiate,
  kCaptureUpdate,
  kCaptureFirstLaunch,
  kCount
};

// "warmup", ..., "capture:first_launch".
std::string_view NvtxRangeSuffix(NvtxRange r);
// "<method>:<suffix>", e.g. "forward:replay".
std::string NvtxRangeName(std::string_view method, NvtxRange r);
inline constexpr std::string_view kNvtxDomain = "encore";

// One method's registered range names. Made once per method instance.
class NvtxMethodRanges {
 public:
  explicit NvtxMethodRanges(std::string_view method);
  NvtxMethodRanges(const NvtxMethodRanges&) = delete;
  NvtxMethodRanges& operator=(const NvtxMethodRanges&) = delete;

  // Null when no profiler is attached.
  void* domain() const { return domain_; }
  void* name(NvtxRange r) const { return names_[static_cast<int>(r)]; }

 private:
  void* domain_ = nullptr;  // nvtxDomainHandle_t
  std::array<void*, static_cast<int>(NvtxRange::kCount)> names_{};  // nvtxStringHandle_t
};

namespace internal {
void NvtxPush(void* domain, void* name) noexcept;
void NvtxPop(void* domain) noexcept;
}  // namespace internal

// A range for the scope; nothing when no profiler is attached.
class NvtxScope {
 public:
  NvtxScope(const NvtxMethodRanges& ranges, NvtxRange r) noexcept : domain_(ranges.domain()) {
    if (domain_ != nullptr) [[unlikely]] internal::NvtxPush(domain_, ranges.name(r));
  }
  ~NvtxScope() {
    if (domain_ != nullptr) [[unlikely]] internal::NvtxPop(domain_);
  }
  NvtxScope(const NvtxScope&) = delete;
  NvtxScope& operator=(const NvtxScope&) = delete;

 private:
  void* const domain_;
};

// The "encore" domain, created on first use; null when no profiler is
// attached.
void* NvtxDomain() noexcept;

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_NVTX_H_
