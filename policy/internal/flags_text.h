// SPDX-License-Identifier: Apache-2.0
// The parser of the per-method flags text,
//   forward:graphs=on,warmup=3,on_new_shape=refuse;decode:graphs=off,checks=trap
// (`*` names every method), over the table in policy/internal/flag_table.h.
// Private to encore: the Manager parses ManagerOptions::flags_text and
// ENCORE_METHOD_FLAGS with it; not installed, not reached from
// encore/encore.h.
#ifndef ENCORE_POLICY_INTERNAL_FLAGS_TEXT_H_
#define ENCORE_POLICY_INTERNAL_FLAGS_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "encore/core/status.h"
#include "encore/policy/method_flags.h"

namespace encore {

// The flags one entry of the text sets; unset ones leave the base alone.
struct FlagOverrides {
  MethodFlags values;  // the fields set, at their values; the others unused
  uint32_t set = 0;    // bit i: MethodFlagFields()[i] is set

  void ApplyTo(MethodFlags& flags) const;
};

struct FlagEntry {
  std::string method;  // "*" for every method
  FlagOverrides overrides;
};

class FlagsText {
 public:
  // Parses the text form. Empty text (or only separators and spaces) is an
  // empty set. A malformed text is an InvalidArgument that quotes the bad token.
  static StatusOr<FlagsText> Parse(std::string_view text);

  // `base` with the `*` entries applied, then the entries naming `method`,
  // each in text order.
  MethodFlags Resolve(std::string_view method, MethodFlags base) const;
  // Names in the text, other than `*`, that are not in `known`.
  std::vector<std::string> UnknownMethods(const std::vector<std::string>& known) const;

  const std::vector<FlagEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<FlagEntry> entries_;
};

}  // namespace encore

#endif  // ENCORE_POLICY_INTERNAL_FLAGS_TEXT_H_
