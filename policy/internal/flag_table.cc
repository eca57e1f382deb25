// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/flag_table.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <type_traits>

namespace encore {
namespace {

// The values of each enum the text takes, in the order its errors list them;
// the parser accepts exactly the names that ShapePolicyName, CheckModeName,
// BindingName and CaptureModeName print.
template <class E>
struct EnumValues;
template <>
struct EnumValues<ShapePolicy> {
  static constexpr ShapePolicy kAll[] = {ShapePolicy::kRefuse, ShapePolicy::kEager, ShapePolicy::kRecapture,
                                         ShapePolicy::kPad};
  static std::string_view Name(ShapePolicy p) { return ShapePolicyName(p); }
};
template <>
struct EnumValues<CheckMode> {
  static constexpr CheckMode kAll[] = {CheckMode::kRecord, CheckMode::kTrap, CheckMode::kOff};
  static std::string_view Name(CheckMode m) { return CheckModeName(m); }
};
template <>
struct EnumValues<Binding> {
  static constexpr Binding kAll[] = {Binding::kStaged, Binding::kDirect, Binding::kAuto};
  static std::string_view Name(Binding b) { return BindingName(b); }
};
template <>
struct EnumValues<CaptureMode> {
  static constexpr CaptureMode kAll[] = {CaptureMode::kForeground, CaptureMode::kBackground};
  static std::string_view Name(CaptureMode m) { return CaptureModeName(m); }
};
template <class T>
constexpr bool kIsFlagEnum = std::is_enum_v<T>;

std::optional<bool> ParseBool(std::string_view v) {
  if (v == "on" || v == "true" || v == "1" || v == "yes") return true;
  if (v == "off" || v == "false" || v == "0" || v == "no") return false;
  return std::nullopt;
}

std::optional<int> ParseInt(std::string_view v) {
  int out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return out;
}

std::optional<double> ParseDouble(std::string_view v) {
  double out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || !(out >= 0) || out == HUGE_VAL) return std::nullopt;
  return out;
}

// "1|2|4|8": positive, strictly ascending sizes; "" is the empty list
// (learned buckets).
std::optional<std::vector<int64_t>> ParseBuckets(std::string_view v) {
  std::vector<int64_t> out;
  if (v.empty()) return out;
  for (std::string_view part : SplitFlagText(v, '|')) {
    part = TrimFlagSpace(part);
    int64_t b = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), b);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size() || b < 1) return std::nullopt;
    if (!out.empty() && b <= out.back()) return std::nullopt;
    out.push_back(b);
  }
  return out;
}

template <class E>
std::optional<E> ParseEnum(std::string_view v) {
  for (E e : EnumValues<E>::kAll) {
    if (EnumValues<E>::Name(e) == v) return e;
  }
  return std::nullopt;
}

std::string JsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Status CheckAtLeast(const FlagField& field, const MethodFlags& f, std::string_view what) {
  const int v = f.*std::get<int MethodFlags::*>(field.member);
  if (v >= field.min) return OkStatus();
  return InvalidArgumentError(std::string(what) + ": " + std::string(field.name) + " is " + std::to_string(v) +
                              ", must be >= " + std::to_string(field.min));
}

// verify, verify_every and verify_tolerance are checked together, at the
// last of them: the counts in one message, then the tolerance, then what
// on_new_shape=pad needs of verification.
Status CheckVerification(const FlagField&, const MethodFlags& f, std::string_view what) {
  if (f.verify < 0 || f.verify_every < 0) {
    return InvalidArgumentError(std::string(what) + ": verify is " + std::to_string(f.verify) + " and verify_every " +
                                std::to_string(f.verify_every) + ", both must be >= 0");
  }
  if (!(f.verify_tolerance >= 0) || std::isinf(f.verify_tolerance)) {
    return InvalidArgumentError(std::string(what) + ": verify_tolerance is " + std::to_string(f.verify_tolerance) +
                                ", must be finite and >= 0");
  }
  if (f.on_new_shape == ShapePolicy::kPad && (f.verify | f.verify_every) != 0 && !f.copy_outputs) {
    // A padded graph's static outputs hold the bucket's rows, an eager
    // re-run only the call's: there is nothing like for like to compare.
    return InvalidArgumentError(std::string(what) +
                                ": verify with on_new_shape=pad needs copy_outputs=on (the static outputs hold the "
                                "bucket's rows, an eager run only the call's)");
  }
  return OkStatus();
}

Status CheckBuckets(const FlagField&, const MethodFlags& f, std::string_view what) {
  for (size_t i = 0; i < f.buckets.size(); ++i) {
    if (f.buckets[i] < 1 || (i > 0 && f.buckets[i] <= f.buckets[i - 1])) {
      return InvalidArgumentError(std::string(what) + ": buckets are " + BucketsText(f.buckets) +
                                  ", must be positive and strictly ascending");
    }
  }
  return OkStatus();
}

// 0 (unset) or at least 1: below 1 every padded call would run eagerly,
// since a bucket always holds at least the call's rows.
Status CheckMaxPadding(const FlagField&, const MethodFlags& f, std::string_view what) {
  if (f.max_padding == 0 || (f.max_padding >= 1 && !std::isinf(f.max_padding))) return OkStatus();
  return InvalidArgumentError(std::string(what) + ": max_padding is " + JsonNumber(f.max_padding) +
                              ", must be 0 (unset: measured) or a finite number >= 1");
}

using D = InDecisionText;
constexpr FlagField kFields[] = {
    {"graphs", "graphs", &MethodFlags::graphs, 0, D::kAlways, nullptr},
    {"warmup_calls", "warmup", &MethodFlags::warmup_calls, 0, D::kAlways, CheckAtLeast},
    {"on_new_shape", "on_new_shape", &MethodFlags::on_new_shape, 0, D::kAlways, nullptr},
    {"max_graphs", "max_graphs", &MethodFlags::max_graphs, 1, D::kAlways, CheckAtLeast},
    {"checks", "checks", &MethodFlags::checks, 0, D::kNo, nullptr},
    {"copy_outputs", "copy_outputs", &MethodFlags::copy_outputs, 0, D::kNo, nullptr},
    {"binding", "binding", &MethodFlags::binding, 0, D::kNo, nullptr},
    {"verify", "verify", &MethodFlags::verify, 0, D::kUnlessDefault, nullptr},
    {"verify_every", "verify_every", &MethodFlags::verify_every, 0, D::kUnlessDefault, nullptr},
    {"verify_tolerance", "verify_tolerance", &MethodFlags::verify_tolerance, 0, D::kNo, CheckVerification},
    {"buckets", "buckets", &MethodFlags::buckets, 0, D::kUnlessDefault, CheckBuckets},
    {"max_padding", "max_padding", &MethodFlags::max_padding, 0, D::kUnlessDefault, CheckMaxPadding},
    {"capture_mode", "capture", &MethodFlags::capture_mode, 0, D::kNo, nullptr},
};
static_assert(std::size(kFields) == kMethodFlagsMembers,
              "every member of MethodFlags needs its row in kFields (policy/internal/flag_table.cc)");

}  // namespace

std::span<const FlagField> MethodFlagFields() { return kFields; }

const FlagField* FindFlagField(std::string_view key) {
  for (const FlagField& f : kFields) {
    if (f.text_key == key || f.name == key) return &f;
  }
  return nullptr;
}

bool ParseFlagValue(const FlagField& field, std::string_view value, MethodFlags& into) {
  return std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(into.*member)>;
        std::optional<T> v;
        if constexpr (std::is_same_v<T, bool>) {
          v = ParseBool(value);
        } else if constexpr (std::is_same_v<T, int>) {
          v = ParseInt(value);
          if (v && *v < field.min) v.reset();
        } else if constexpr (std::is_same_v<T, double>) {
          v = ParseDouble(value);
        } else if constexpr (kIsFlagEnum<T>) {
          v = ParseEnum<T>(value);
        } else {
          v = ParseBuckets(value);
        }
        if (v) into.*member = *std::move(v);
        return v.has_value();
      },
      field.member);
}

std::string FlagTakes(const FlagField& field) {
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_reference_t<decltype(MethodFlags{}.*member)>;
        if constexpr (std::is_same_v<T, bool>) {
          return "on or off";
        } else if constexpr (std::is_same_v<T, int>) {
          return "an integer >= " + std::to_string(field.min);
        } else if constexpr (std::is_same_v<T, double>) {
          return "a finite number >= 0";
        } else if constexpr (kIsFlagEnum<T>) {
          std::string s;
          const size_t n = std::size(EnumValues<T>::kAll);
          for (size_t i = 0; i < n; ++i) {
            s += (i == 0 ? "" : i + 1 == n ? " or " : ", ");
            s += EnumValues<T>::Name(EnumValues<T>::kAll[i]);
          }
          return s;
        } else {
          return "batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)";
        }
      },
      field.member);
}

std::string FlagText(const FlagField& field, const MethodFlags& flags) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = flags.*member;
        using T = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "on" : "off";
        } else if constexpr (std::is_same_v<T, int>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return JsonNumber(v);
        } else if constexpr (kIsFlagEnum<T>) {
          return std::string(EnumValues<T>::Name(v));
        } else {
          return BucketsText(v);
        }
      },
      field.member);
}

std::string FlagJson(const FlagField& field, const MethodFlags& flags) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = flags.*member;
        using T = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (kIsFlagEnum<T>) {
          return "\"" + std::string(EnumValues<T>::Name(v)) + "\"";
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          std::string j = "[";
          for (size_t i = 0; i < v.size(); ++i) j += (i ? "," : "") + std::to_string(v[i]);
          return j + "]";
        } else {
          return FlagText(field, flags);  // numbers read the same in both
        }
      },
      field.member);
}

void CopyFlag(const FlagField& field, const MethodFlags& from, MethodFlags& to) {
  std::visit([&](auto member) { to.*member = from.*member; }, field.member);
}

bool FlagIsDefault(const FlagField& field, const MethodFlags& flags) {
  static const MethodFlags kDefaults;
  return std::visit([&](auto member) { return flags.*member == kDefaults.*member; }, field.member);
}

Status ValidateMethodFlags(const MethodFlags& flags, std::string_view what) {
  for (const FlagField& f : kFields) {
    if (f.check) ENCORE_RETURN_IF_ERROR(f.check(f, flags, what));
  }
  return OkStatus();
}

std::string DecisionFlagsText(const MethodFlags& flags) {
  std::string s;
  for (const FlagField& f : kFields) {
    if (f.decision == D::kNo || (f.decision == D::kUnlessDefault && FlagIsDefault(f, flags))) continue;
    s += (s.empty() ? "" : ",") + std::string(f.text_key) + "=" + FlagText(f, flags);
  }
  return s;
}

uint64_t DecisionFlagsFingerprint(const MethodFlags& flags) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : DecisionFlagsText(flags)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string MethodFlagsJson(const MethodFlags& flags) {
  std::string j = "{";
  for (const FlagField& f : kFields) {
    j += (j.size() > 1 ? ",\"" : "\"") + std::string(f.name) + "\":" + FlagJson(f, flags);
  }
  return j + "}";
}

std::string_view TrimFlagSpace(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitFlagText(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace encore
