// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/method_flags_text.h"

#include <string>

#include "encore/policy/internal/flag_table.h"
#include "encore/policy/internal/flags_text.h"

namespace encore {

StatusOr<MethodFlags> ApplyMethodFlagsText(std::string_view text, MethodFlags base) {
  if (size_t at = text.find_first_of(":;"); at != std::string_view::npos) {
    return InvalidArgumentError("method flags: bad token '" + std::string(text) + "': the flags of one method take no '" +
                                text[at] + "' (key=value,... without the method's name)");
  }
  if (TrimFlagSpace(text).empty()) return base;
  ENCORE_ASSIGN_OR_RETURN(FlagsText parsed, FlagsText::Parse("*:" + std::string(text)));
  MethodFlags flags = parsed.Resolve("*", std::move(base));
  ENCORE_RETURN_IF_ERROR(ValidateMethodFlags(flags, "method flags"));
  return flags;
}

}  // namespace encore
