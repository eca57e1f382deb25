// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/flags_text.h"

#include <algorithm>
#include <span>
#include <string>

#include "encore/policy/internal/flag_table.h"

namespace encore {
namespace {

static_assert(kMethodFlagsMembers <= 32, "FlagOverrides::set has one bit per field");

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

Status Bad(std::string_view token, std::string_view why) {
  return InvalidArgumentError("method flags: bad token '" + Visible(token) + "': " + Visible(why));
}

bool ValidName(std::string_view n) {
  if (n == "*") return true;
  if (n.empty()) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return c == '_' || c == '-' || c == '.' || c == '/' || (c >= '0' && c <= '9') ||
           (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

// "unknown flag 'colour' (graphs, warmup, ...)": the keys in table order.
std::string UnknownFlag(std::string_view key) {
  std::string known;
  for (const FlagField& f : MethodFlagFields()) known += (known.empty() ? "" : ", ") + std::string(f.text_key);
  return "unknown flag '" + std::string(key) + "' (" + known + ")";
}

// One `key=value` of an entry, into `o`.
Status ParseFlag(std::string_view entry, std::string_view raw_kv, FlagOverrides& o) {
  std::string_view kv = TrimFlagSpace(raw_kv);
  if (kv.empty()) return Bad(entry, "empty flag");
  size_t eq = kv.find('=');
  if (eq == std::string_view::npos) return Bad(kv, "expected key=value");
  std::string_view key = TrimFlagSpace(kv.substr(0, eq));
  std::string_view value = TrimFlagSpace(kv.substr(eq + 1));
  const FlagField* field = FindFlagField(key);
  if (field == nullptr) return Bad(kv, UnknownFlag(key));
  if (!ParseFlagValue(*field, value, o.values)) {
    return Bad(kv, std::string(field->text_key) + " takes " + FlagTakes(*field));
  }
  o.set |= uint32_t{1} << (field - MethodFlagFields().data());
  return OkStatus();
}

// One `method:key=value,...` (trimmed, not empty).
StatusOr<FlagEntry> ParseEntry(std::string_view entry) {
  size_t colon = entry.find(':');
  if (colon == std::string_view::npos) {
    return Bad(entry, "expected 'method:key=value,...'");
  }
  std::string_view name = TrimFlagSpace(entry.substr(0, colon));
  // Quoting the empty name would print '' and hide which entry it was.
  if (name.empty()) return Bad(entry, "no method name before ':'");
  if (!ValidName(name)) return Bad(name, "not a method name (letters, digits, _ - . / or *)");
  FlagEntry fe{std::string(name), {}};
  std::string_view body = entry.substr(colon + 1);
  if (TrimFlagSpace(body).empty()) return Bad(entry, "no flags after ':'");
  for (std::string_view raw_kv : SplitFlagText(body, ',')) {
    ENCORE_RETURN_IF_ERROR(ParseFlag(entry, raw_kv, fe.overrides));
  }
  return fe;
}

}  // namespace

void FlagOverrides::ApplyTo(MethodFlags& flags) const {
  std::span<const FlagField> fields = MethodFlagFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (set & (uint32_t{1} << i)) CopyFlag(fields[i], values, flags);
  }
}

StatusOr<FlagsText> FlagsText::Parse(std::string_view text) {
  FlagsText out;
  for (std::string_view raw_entry : SplitFlagText(text, ';')) {
    std::string_view entry = TrimFlagSpace(raw_entry);
    if (entry.empty()) continue;
    ENCORE_ASSIGN_OR_RETURN(FlagEntry fe, ParseEntry(entry));
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
