// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/method_flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>

namespace encore {
namespace {

// ASCII whitespace, '\r' included: a flags file written on Windows ends its
// lines with "\r\n".
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// `s` with control and non-ASCII bytes escaped ("\r", "\x01", "\xc2"), so a
// message that quotes a token shows what made it bad.
std::string Visible(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
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

Status Bad(std::string_view token, std::string_view why) {
  return InvalidArgumentError("method flags: bad token '" + Visible(token) + "': " + Visible(why));
}

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
  for (std::string_view part : Split(v, '|')) {
    part = Trim(part);
    int64_t b = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), b);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size() || b < 1) return std::nullopt;
    if (!out.empty() && b <= out.back()) return std::nullopt;
    out.push_back(b);
  }
  return out;
}

// The value of `all` whose name is `v`: the parser accepts exactly the
// names that ShapePolicyName and CheckModeName print.
template <class E>
std::optional<E> ParseEnum(std::string_view v, std::initializer_list<E> all, std::string_view (*name)(E)) {
  for (E e : all) {
    if (name(e) == v) return e;
  }
  return std::nullopt;
}

bool ValidName(std::string_view n) {
  if (n == "*") return true;
  if (n.empty()) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return c == '_' || c == '-' || c == '.' || c == '/' || (c >= '0' && c <= '9') ||
           (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

}  // namespace

std::string DecisionFlagsText(const MethodFlags& flags) {
  return std::string("graphs=") + (flags.graphs ? "on" : "off") + ",warmup=" + std::to_string(flags.warmup_calls) +
         ",on_new_shape=" + std::string(ShapePolicyName(flags.on_new_shape)) +
         ",max_graphs=" + std::to_string(flags.max_graphs) +
         (flags.verify ? ",verify=" + std::to_string(flags.verify) : std::string()) +
         (flags.verify_every ? ",verify_every=" + std::to_string(flags.verify_every) : std::string()) +
         (flags.buckets.empty() ? std::string() : ",buckets=" + BucketsText(flags.buckets));
}

std::string BucketsText(const std::vector<int64_t>& buckets) {
  std::string s;
  for (size_t i = 0; i < buckets.size(); ++i) s += (i ? "|" : "") + std::to_string(buckets[i]);
  return s;
}

bool VerifiesLaunch(const MethodFlags& flags, int64_t graph_launch, int64_t replay) {
  if (flags.verify > 0 && graph_launch <= int64_t{flags.verify} + 1) return true;
  return flags.verify_every > 0 && replay > 0 && replay % flags.verify_every == 0;
}

uint64_t DecisionFlagsFingerprint(const MethodFlags& flags) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : DecisionFlagsText(flags)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string_view ShapePolicyName(ShapePolicy p) {
  switch (p) {
    case ShapePolicy::kRefuse: return "refuse";
    case ShapePolicy::kEager: return "eager";
    case ShapePolicy::kRecapture: return "recapture";
    case ShapePolicy::kPad: return "pad";
  }
  return "unknown";
}

std::string_view CheckModeName(CheckMode m) {
  switch (m) {
    case CheckMode::kRecord: return "record";
    case CheckMode::kTrap: return "trap";
    case CheckMode::kOff: return "off";
  }
  return "unknown";
}

std::string_view BindingName(Binding b) {
  switch (b) {
    case Binding::kStaged: return "staged";
    case Binding::kDirect: return "direct";
    case Binding::kAuto: return "auto";
  }
  return "unknown";
}

Status ValidateMethodFlags(const MethodFlags& f, std::string_view what) {
  if (f.warmup_calls < 0) {
    return InvalidArgumentError(std::string(what) + ": warmup_calls is " + std::to_string(f.warmup_calls) +
                                ", must be >= 0");
  }
  if (f.max_graphs < 1) {
    return InvalidArgumentError(std::string(what) + ": max_graphs is " + std::to_string(f.max_graphs) +
                                ", must be >= 1");
  }
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
  for (size_t i = 0; i < f.buckets.size(); ++i) {
    if (f.buckets[i] < 1 || (i > 0 && f.buckets[i] <= f.buckets[i - 1])) {
      return InvalidArgumentError(std::string(what) + ": buckets are " + BucketsText(f.buckets) +
                                  ", must be positive and strictly ascending");
    }
  }
  return OkStatus();
}

void FlagOverrides::ApplyTo(MethodFlags& f) const {
  if (graphs) f.graphs = *graphs;
  if (warmup_calls) f.warmup_calls = *warmup_calls;
  if (on_new_shape) f.on_new_shape = *on_new_shape;
  if (max_graphs) f.max_graphs = *max_graphs;
  if (checks) f.checks = *checks;
  if (copy_outputs) f.copy_outputs = *copy_outputs;
  if (binding) f.binding = *binding;
  if (verify) f.verify = *verify;
  if (verify_every) f.verify_every = *verify_every;
  if (verify_tolerance) f.verify_tolerance = *verify_tolerance;
  if (buckets) f.buckets = *buckets;
}

StatusOr<FlagsText> FlagsText::Parse(std::string_view text) {
  FlagsText out;
  for (std::string_view raw_entry : Split(text, ';')) {
    std::string_view entry = Trim(raw_entry);
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      return Bad(entry, "expected 'method:key=value,...'");
    }
    std::string_view name = Trim(entry.substr(0, colon));
    // Quoting the empty name would print '' and hide which entry it was.
    if (name.empty()) return Bad(entry, "no method name before ':'");
    if (!ValidName(name)) return Bad(name, "not a method name (letters, digits, _ - . / or *)");
    FlagEntry fe{std::string(name), {}};
    std::string_view body = entry.substr(colon + 1);
    if (Trim(body).empty()) return Bad(entry, "no flags after ':'");
    for (std::string_view raw_kv : Split(body, ',')) {
      std::string_view kv = Trim(raw_kv);
      if (kv.empty()) return Bad(entry, "empty flag");
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos) return Bad(kv, "expected key=value");
      std::string_view key = Trim(kv.substr(0, eq));
      std::string_view value = Trim(kv.substr(eq + 1));
      FlagOverrides& o = fe.overrides;
      if (key == "graphs") {
        o.graphs = ParseBool(value);
        if (!o.graphs) return Bad(kv, "graphs takes on or off");
      } else if (key == "copy_outputs") {
        o.copy_outputs = ParseBool(value);
        if (!o.copy_outputs) return Bad(kv, "copy_outputs takes on or off");
      } else if (key == "warmup" || key == "warmup_calls") {
        o.warmup_calls = ParseInt(value);
        if (!o.warmup_calls || *o.warmup_calls < 0) return Bad(kv, "warmup takes an integer >= 0");
      } else if (key == "max_graphs") {
        o.max_graphs = ParseInt(value);
        if (!o.max_graphs || *o.max_graphs < 1) return Bad(kv, "max_graphs takes an integer >= 1");
      } else if (key == "on_new_shape") {
        o.on_new_shape = ParseEnum(
            value, {ShapePolicy::kRefuse, ShapePolicy::kEager, ShapePolicy::kRecapture, ShapePolicy::kPad},
            ShapePolicyName);
        if (!o.on_new_shape) return Bad(kv, "on_new_shape takes refuse, eager, recapture or pad");
      } else if (key == "checks") {
        o.checks = ParseEnum(value, {CheckMode::kRecord, CheckMode::kTrap, CheckMode::kOff}, CheckModeName);
        if (!o.checks) return Bad(kv, "checks takes record, trap or off");
      } else if (key == "binding") {
        o.binding = ParseEnum(value, {Binding::kStaged, Binding::kDirect, Binding::kAuto}, BindingName);
        if (!o.binding) return Bad(kv, "binding takes staged, direct or auto");
      } else if (key == "verify" || key == "verify_every") {
        std::optional<int>& n = key == "verify" ? o.verify : o.verify_every;
        n = ParseInt(value);
        if (!n || *n < 0) return Bad(kv, std::string(key) + " takes an integer >= 0");
      } else if (key == "verify_tolerance") {
        o.verify_tolerance = ParseDouble(value);
        if (!o.verify_tolerance) return Bad(kv, "verify_tolerance takes a finite number >= 0");
      } else if (key == "buckets") {
        o.buckets = ParseBuckets(value);
        if (!o.buckets) return Bad(kv, "buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)");
      } else {
        return Bad(kv, "unknown flag '" + std::string(key) +
                           "' (graphs, warmup, on_new_shape, max_graphs, checks, copy_outputs, binding, "
                           "verify, verify_every, verify_tolerance, buckets)");
      }
    }
    out.entries_.push_back(std::move(fe));
  }
  return out;
}

MethodFlags FlagsText::Resolve(std::string_view method, MethodFlags base) const {
  for (const FlagEntry& e : entries_) {
    if (e.method == "*") e.overrides.ApplyTo(base);
  }
  for (const FlagEntry& e : entries_) {
    if (e.method == method) e.overrides.ApplyTo(base);
  }
  return base;
}

std::vector<std::string> FlagsText::UnknownMethods(const std::vector<std::string>& known) const {
  std::vector<std::string> out;
  for (const FlagEntry& e : entries_) {
    if (e.method == "*") continue;
    if (std::find(known.begin(), known.end(), e.method) != known.end()) continue;
    if (std::find(out.begin(), out.end(), e.method) == out.end()) out.push_back(e.method);
  }
  return out;
}

}  // namespace encore
